/// What `stopRecording` returns: a handle on the finished recording. The app never gets the
/// movie, a path or the preview page; it can only ask the daemon to show the page to the person.
public struct PreviewHandle: Sendable, Equatable, Hashable {
    /// Opaque: names the recording in requests, opens nothing.
    public let recordingID: String
    /// How long the recording is, in seconds.
    public let duration: Double

    /// How many pictures it holds, when the handle came from `stopRecording`: 0 when it was
    /// stopped before its first picture, and the store kept nothing.
    @_spi(OpenReplayKitInternal) public let frames: Int?

    /// A handle for a recording id an app kept (the C library's apps pass ids, not handles).
    @_spi(OpenReplayKitInternal) public init(recordingID: String, duration: Double, frames: Int? = nil) {
        self.recordingID = recordingID
        self.duration = duration
        self.frames = frames
    }

    /// Asks replayd to show the person the preview page (through their consent agent),
    /// where they can watch, save or delete the recording.
    public func show(recorder: ScreenRecorder = .shared) async throws(RecordingError) {
        try await recorder.showPreview(self)
    }
}
