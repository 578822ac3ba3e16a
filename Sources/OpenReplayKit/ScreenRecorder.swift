public import FoundationEssentials  // public: exportClip writes to a URL
import ReplayIPC  // the wire stays inside: apps see the SDK's own types only
public import ReplayMedia  // public: a captured frame is a PixelBuffer at a MediaTime
import Synchronization

/// The app's recorder, as ReplayKit's RPScreenRecorder: record the screen into the daemon's
/// private store (the app gets a handle, never the movie), or capture the app's own windows.
/// Capture happens in replayd, after the person's consent; this process never reads the screen.
///
/// Every async call connects and waits without blocking its caller's thread, and returns at
/// once with `RecordingError.Code.cancelled` when its task is cancelled, hanging up the
/// connection it was using (a start then never happens, or is undone by the daemon).
public final class ScreenRecorder: Sendable {
    public static let shared = ScreenRecorder()

    private struct State {
        var microphone = false
        var camera = false
        var cameraCorner: CameraCorner = .bottomRight

        /// The camera the next recording draws, if any.
        var cameraOverlay: CameraOverlay? { camera ? CameraOverlay(corner: cameraCorner.wire) : nil }
        var starting = false
        var recording: DaemonConnection?
        var capture: (connection: DaemonConnection, pump: Task<Void, Never>)?
        var control: DaemonConnection?
        var clipBuffer: DaemonConnection?
    }

    private let endpoint: DaemonEndpoint
    private let state = Mutex(State())

    /// - Parameter socket: replayd's socket; nil finds it as the `replay` CLI does.
    public init(socket: String? = nil) {
        endpoint = .socket(socket)
    }

    /// A recorder whose every connection is a socket `connect` hands out (the SDK's tests: a
    /// fake daemon's end of a socket pair).
    @_spi(OpenReplayKitInternal) public init(connect: @escaping @Sendable () throws -> Int32) {
        endpoint = .connector(connect)
    }

    public var isRecording: Bool { state.withLock { $0.recording != nil } }

    /// Whether the next recording also takes the microphone (asked for in the consent prompt).
    public var isMicrophoneEnabled: Bool {
        get { state.withLock { $0.microphone } }
        set { state.withLock { $0.microphone = newValue } }
    }

    /// Whether the next recording draws the camera in a corner of it (ReplayKit's
    /// `isCameraEnabled`; asked for in the consent prompt). The camera is the desktop's
    /// default one, through PipeWire; none there leaves a warning in the daemon's log, and
    /// the recording goes on without it.
    public var isCameraEnabled: Bool {
        get { state.withLock { $0.camera } }
        set { state.withLock { $0.camera = newValue } }
    }

    /// Which corner of the recording the camera's picture takes (default: bottom right).
    public var cameraCorner: CameraCorner {
        get { state.withLock { $0.cameraCorner } }
        set { state.withLock { $0.cameraCorner = newValue } }
    }

    /// Starts recording what `filter` keeps of the screen (ScreenCaptureKit's content filter:
    /// a display, or a window of this app's, with windows excluded) with its audio.
    public func startRecording(filter: ContentFilter) async throws(RecordingError) {
        try await startRecording(area: filter.area, excluding: filter.excludedWindows)
    }

    /// Starts recording the screen with its audio. The first time, and again after 8 minutes
    /// unused, the person is asked; a refusal throws `userDeclined`.
    public func startRecording() async throws(RecordingError) {
        try await startRecording(area: nil, excluding: [])
    }

    private func startRecording(area: CaptureArea?, excluding excluded: [UInt32]) async throws(RecordingError) {
        let options = try state.withLock { state throws(RecordingError) -> RecordingOptions in
            guard state.recording == nil, !state.starting else {
                throw RecordingError(.attemptToStartInRecordingState, "a recording is already running; stop it first")
            }
            state.starting = true
            return RecordingOptions(microphone: state.microphone, area: area,
                                    camera: state.cameraOverlay,
                                    excludedWindows: excluded.isEmpty ? nil : excluded)
        }
        defer { state.withLock { $0.starting = false } }
        let connection = try await start(.startRecording(options: options), what: "recording") {
            if case .recordingStarted = $0 { true } else { false }
        }
        state.withLock { $0.recording = connection }
    }

    /// Stops the recording and returns its preview handle. A recording that already ended by
    /// itself (the screen resized, the disk filled) throws why; what was recorded is kept.
    public func stopRecording() async throws(RecordingError) -> PreviewHandle {
        guard let connection = state.withLock({ $0.recording }) else {
            throw RecordingError(.attemptToStopNonRecording, "no recording is running")
        }
        defer {
            connection.link.close()
            state.withLock { $0.recording = nil }
        }
        try? connection.link.send(.stopRecording)
        while true {
            // Cancelled, the connection is closed all the same, which stops and keeps the recording.
            switch try await connection.inbox.next().event {
            case .recordingFinished(let summary):
                if let error = summary.error { throw RecordingError(recordingEnded: error) }
                return PreviewHandle(recordingID: summary.id, duration: summary.duration, frames: summary.frames)
            case nil:
                throw RecordingError(.interrupted, "replayd went away during the recording")
            default:
                continue
            }
        }
    }

    /// Deletes a recording this app made, as ReplayKit's discardRecording.
    public func discardRecording(_ preview: PreviewHandle) async throws(RecordingError) {
        try await exchange(.discardRecording(id: preview.recordingID), failure: .failedToDiscardRecording) {
            if case .recordingDeleted = $0 { true } else { false }
        }
    }

    func showPreview(_ preview: PreviewHandle) async throws(RecordingError) {
        try await exchange(.showPreview(id: preview.recordingID), failure: .failedToShowPreview) {
            if case .previewShown = $0 { true } else { false }
        }
    }

    /// Starts keeping the last `length` seconds (1 … 3600) of this app's own windows and the
    /// sound (in replayd's memory up to 60 s, on its disk beyond), as ReplayKit's startClipBuffering: after the person's
    /// consent, as for a recording; announced on the desktop while it runs.
    public func startClipBuffering(length: TimeInterval = 30) async throws(RecordingError) {
        guard state.withLock({ $0.clipBuffer == nil }) else {
            throw RecordingError(.attemptToStartInRecordingState, "clip buffering is already on; stop it first")
        }
        let options = state.withLock { state in
            RecordingOptions(microphone: state.microphone,
                             camera: state.cameraOverlay)
        }
        let connection = try await start(.startClipBuffering(options: options, length: length), what: "clip buffering") {
            if case .clipBufferingStarted = $0 { true } else { false }
        }
        state.withLock { $0.clipBuffer = connection }
    }

    /// Writes the last `duration` seconds (fewer if buffering started later) as an MP4 movie
    /// at `url`, as ReplayKit's exportClip(to:duration:): the app's own windows only, which
    /// is why the app may have it; buffering goes on.
    public func exportClip(to url: URL, duration: TimeInterval) async throws(RecordingError) {
        guard let connection = state.withLock({ $0.clipBuffer }) else {
            throw RecordingError(.attemptToStopNonRecording, "clip buffering is not on")
        }
        try connection.link.send(.saveClip(last: duration))
        // Cancelled, the clip's connection goes (and the buffer with it), as an app's buffer ends with its connection.
        var finished = false
        defer {
            if !finished {
                connection.link.close()
                state.withLock { $0.clipBuffer = nil }
            }
        }
        let partial = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).partial")
        var file: PartialFile?
        defer { file?.close() }
        while true {
            let (event, body): EventInbox.Entry
            do {
                (event, body) = try await connection.inbox.next()
            } catch {
                try? FileManager.default.removeItem(at: partial)
                throw error
            }
            switch event {
            case .clipSaved:
                continue
            case .exportBegin:
                file = try PartialFile(path: partial.path)
            case .exportChunk:
                try file?.write(body)
            case .exportEnd:
                do {
                    file?.close()
                    file = nil
                    _ = try? FileManager.default.removeItem(at: url)
                    try FileManager.default.moveItem(at: partial, to: url)
                } catch {
                    finished = true
                    throw RecordingError(.failedToSaveClip, "cannot write \(url.path): \(error)")
                }
                finished = true
                return
            case .error(_, let message):
                finished = true
                try? FileManager.default.removeItem(at: partial)
                throw RecordingError(.failedToSaveClip, message)
            case nil:
                try? FileManager.default.removeItem(at: partial)
                throw RecordingError(.interrupted, "replayd went away while saving the clip")
            default:
                continue
            }
        }
    }

    /// Ends clip buffering; what was kept and not exported is gone.
    public func stopClipBuffering() async throws(RecordingError) {
        guard let connection = state.withLock({ state in
            defer { state.clipBuffer = nil }
            return state.clipBuffer
        }) else {
            throw RecordingError(.attemptToStopNonRecording, "clip buffering is not on")
        }
        defer { connection.link.close() }
        try await connection.ask(.stopClipBuffering, failure: .failedToSaveClip) {
            if case .clipBufferingStopped = $0 { true } else { false }
        }
    }

    /// Streams this app's own windows (everything else is black), at most `fps` (≤ 60) a second.
    public func startCapture(fps: Int = 60) async throws(RecordingError) -> AsyncThrowingStream<CapturedFrame, any Error> {
        guard state.withLock({ $0.capture == nil }) else {
            throw RecordingError(.attemptToStartInRecordingState, "a capture is already running; stop it first")
        }
        let connection = try await start(.startCapture(options: CaptureOptions(fps: fps)), what: "capture") {
            if case .captureStarted = $0 { true } else { false }
        }
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: CapturedFrame.self, throwing: (any Error).self, bufferingPolicy: .bufferingNewest(4))
        let pump = Task { await Self.pumpFrames(from: connection.inbox, into: continuation) }
        state.withLock { $0.capture = (connection, pump) }
        return stream
    }

    /// Sends a start request on a new connection and waits, through the person's consent,
    /// for the event `isStarted` accepts.
    /// Cancelled, the connection is closed: the daemon forgets the question to the person, or
    /// ends what had just started.
    private func start(_ request: ClientRequest, what: String,
                       isStarted: (DaemonEvent) -> Bool) async throws(RecordingError) -> DaemonConnection {
        let connection = try await DaemonConnection.open(endpoint)
        var started = false
        defer { if !started { connection.link.close() } }
        try connection.link.send(request)
        while true {
            switch try await connection.inbox.next().event {
            case let event? where isStarted(event):
                started = true
                return connection
            case .error(let code, let message):
                throw RecordingError(daemon: code, message: message, fallback: .failedToStart)
            case nil:
                throw RecordingError(.interrupted, "replayd closed the connection before the \(what) started")
            default:
                continue
            }
        }
    }

    /// Ends the capture; the stream finishes.
    public func stopCapture() async throws(RecordingError) {
        guard let capture = state.withLock({ state in
            defer { state.capture = nil }
            return state.capture
        }) else {
            throw RecordingError(.attemptToStopNonRecording, "no capture is running")
        }
        try? capture.connection.link.send(.stopCapture)
        await capture.pump.value
        capture.connection.link.close()
    }

    /// Keeps `window` (one of this app's X windows) black in every capture, recording and
    /// broadcast, for as long as this process runs or until `unprotect`.
    public func protect(window: UInt32) async throws(RecordingError) {
        try await control(.protectWindow(id: window)) { if case .windowProtected = $0 { true } else { false } }
    }

    public func unprotect(window: UInt32) async throws(RecordingError) {
        try await control(.unprotectWindow(id: window)) { if case .windowUnprotected = $0 { true } else { false } }
    }

    /// Hangs up the control connection, which drops every protection this recorder asked for
    /// (the C library's `ork_client_free`).
    @_spi(OpenReplayKitInternal) public func closeControl() {
        state.withLock { state in
            defer { state.control = nil }
            return state.control
        }?.link.close()
    }

    /// One request on a connection of its own, answered by the event `isAnswer` accepts.
    private func exchange(_ request: ClientRequest, failure: RecordingError.Code,
                          isAnswer: (DaemonEvent) -> Bool) async throws(RecordingError) {
        let connection = try await DaemonConnection.open(endpoint)
        defer { connection.link.close() }
        try await connection.ask(request, failure: failure, isAnswer: isAnswer)
    }

    /// A request on the long-lived control connection, whose lifetime bounds the protections:
    /// cancellable while connecting; the answer, which comes at once, is awaited (closing the
    /// connection would drop every protection).
    private func control(_ request: ClientRequest, isAnswer: (DaemonEvent) -> Bool) async throws(RecordingError) {
        let connection: DaemonConnection
        if let existing = state.withLock({ $0.control }) {
            connection = existing
        } else {
            let opened = try await DaemonConnection.open(endpoint)
            connection = state.withLock { state in
                if let raced = state.control { return raced }
                state.control = opened
                return opened
            }
            if connection.link !== opened.link { opened.link.close() }
        }
        do throws(RecordingError) {
            try await connection.ask(request, failure: .failedToStart, cancellable: false, isAnswer: isAnswer)
        } catch {
            if error.code == .interrupted { state.withLock { $0.control = nil } }
            throw error
        }
    }

    private static func pumpFrames(from inbox: EventInbox,
                                   into continuation: AsyncThrowingStream<CapturedFrame, any Error>.Continuation) async {
        while true {
            // The pump's task is never cancelled: the stream ends with the capture.
            guard let entry = try? await inbox.next(cancellable: false) else { return }
            let (event, body) = entry
            switch event {
            case .capturedFrame(let info):
                if let frame = CapturedFrame(info, bytes: body) { continuation.yield(frame) }
            case .captureStopped(let error):
                continuation.finish(throwing: error.map { RecordingError(recordingEnded: $0) })
                return
            case nil:
                continuation.finish(throwing: RecordingError(.interrupted, "replayd went away during the capture"))
                return
            default:
                continue
            }
        }
    }
}

/// One picture of the app's own windows, in I420.
public struct CapturedFrame: Sendable {
    /// When it was taken, on the monotonic clock.
    public let time: MediaTime
    public let pixels: PixelBuffer

    /// Checks the daemon's sizes before trusting them with memory.
    init?(_ info: CapturedFrameInfo, bytes: [UInt8]) {
        guard info.width > 0, info.height > 0, info.width % 2 == 0, info.height % 2 == 0,
              bytes.count == PixelBuffer.byteCount(width: info.width, height: info.height) else { return nil }
        // replayd converts with ReplayProcessing.PixelConverter: BT.601, video range.
        pixels = PixelBuffer(width: info.width, height: info.height, format: .bt601VideoRange) { $0.copyBytes(from: bytes) }
        time = MediaTime(nanoseconds: Int64(info.time * 1e9))
    }
}

/// What a recording keeps of the screen, as ScreenCaptureKit's SCContentFilter: the whole
/// screen or one display, or one of this app's own windows (followed as it moves; another
/// app's window records black), with windows excluded (painted black).
public struct ContentFilter: Sendable, Equatable {
    let area: CaptureArea?
    let excludedWindows: [UInt32]

    /// The whole screen.
    public static let screen = ContentFilter(area: nil, excludedWindows: [])

    /// One display, by the name `replay sources` lists (RandR's: "DP-1").
    public static func display(_ name: String) -> ContentFilter { ContentFilter(area: .monitor(name: name), excludedWindows: []) }

    /// One of this app's windows, by its X id.
    public static func window(_ id: UInt32) -> ContentFilter { ContentFilter(area: .window(id: id), excludedWindows: []) }

    /// The same, with these windows painted black.
    public func excluding(windows: [UInt32]) -> ContentFilter {
        ContentFilter(area: area, excludedWindows: excludedWindows + windows)
    }
}
