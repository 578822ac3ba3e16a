import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayIPC
import ReplayMedia

/// replayd hands what waits a callback; a test waits for it on its own thread.
func answered<Value: Sendable>(_ ask: (@escaping @Sendable (Result<Value, DaemonError>) -> Void) -> Void) throws(DaemonError) -> Value {
    let answer = Completion<Result<Value, DaemonError>>()
    ask { answer.complete($0) }
    return try answer.wait().get()
}

extension RecordingControl {
    /// Blocks the test until the movie is closed.
    func waitUntilFinished() -> RecordingSummary {
        let summary = Completion<RecordingSummary>()
        onFinish { summary.complete($0) }
        return summary.wait()
    }

    func start() throws(DaemonError) -> RecordingStarted { try answered { start(then: $0) } }

    func pause() throws(DaemonError) { try answered { done in setPaused(true) { done($0.map(Result.failure) ?? .success(())) } } }

    func saveClip(last duration: MediaTime?, trigger: ClipSaveRecord.Trigger, as clipID: String) throws(DaemonError) -> ClipSaved {
        try answered { saveClip(last: duration, trigger: trigger, as: clipID, then: $0) }
    }
}

extension AppCaptureControl {
    /// Blocks the test until the capture has ended.
    func waitUntilFinished() {
        let ended = Completion<Void>()
        onFinish { ended.complete(()) }
        ended.wait()
    }

    func start() throws(DaemonError) -> (width: Int, height: Int) { try answered { start(then: $0) } }
}

extension BroadcastFeed {
    func open() throws(DaemonError) -> BroadcastCaptureOpened { try answered { open(then: $0) } }
}

extension SessionPausing {
    func setPausedAndWait(_ paused: Bool, _ session: any RecordingControl, by who: String) throws(DaemonError) {
        try answered { done in setPaused(paused, session, by: who) { done($0.map(Result.failure) ?? .success(())) } }
    }
}

extension ClientOutbox {
    /// True once fewer than `bytes` are queued, false once the connection closed.
    func waitForRoom(below bytes: Int) -> Bool {
        let room = Completion<Bool>()
        whenRoom(below: bytes) { room.complete($0) }
        return room.wait()
    }
}

extension BroadcastSession {
    /// Blocks the test until the broadcast has ended; its last status.
    func waitUntilFinished() -> BroadcastStatus {
        let status = Completion<BroadcastStatus>()
        onFinish { status.complete($0) }
        return status.wait()
    }
}
