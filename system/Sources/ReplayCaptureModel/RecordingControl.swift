package import ReplayIPC
package import ReplayMedia

/// A recording or clip buffer as replayd drives it: the session itself (`RecordingSession`,
/// in replayd's own process for tests with fakes), or a capture process running one
/// (`CaptureProcessRecording`).
package protocol RecordingControl: AnyObject, Sendable {
    var id: String { get }
    var destination: RecordingDestination { get }
    var phase: SessionPhase { get }
    var isFinished: Bool { get }
    /// Opens the screen, the audio and the movie, then calls `started` once, with what started
    /// or why it could not (nothing kept then). Through the portal that includes the person
    /// choosing a screen: no thread waits meanwhile.
    func start(then started: @escaping @Sendable (Result<RecordingStarted, DaemonError>) -> Void)
    /// Pauses (true) or resumes (false) it, then calls `done` with nil or why it could not.
    func setPaused(_ paused: Bool, then done: @escaping @Sendable (DaemonError?) -> Void)
    /// Ends it; what was captured is kept. Any phase, any number of times.
    func stop()
    /// Ends it for `why` (its summary says so); what was captured is kept.
    func end(because why: String)
    /// Saves a clip buffer's last `duration` (nil: all of it) as recording `clipID` in the
    /// store, then calls `saved` with it or why not; no thread waits for the writing.
    func saveClip(last duration: MediaTime?, trigger: ClipSaveRecord.Trigger, as clipID: String,
                  then saved: @escaping @Sendable (Result<ClipSaved, DaemonError>) -> Void)
    func clipStatus() -> ClipStatus?
    /// Runs `handler` once the movie is closed (at once if it is).
    func onFinish(_ handler: @escaping @Sendable (RecordingSummary) -> Void)
    func progress() -> RecordingProgress
}

extension RecordingControl {
    /// Waits, holding no thread, until the movie is closed.
    package func finished() async -> RecordingSummary {
        await withCheckedContinuation { waiter in onFinish { waiter.resume(returning: $0) } }
    }
}
