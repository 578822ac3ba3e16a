/// Asking replayd to broadcast through an extension.
public struct BroadcastRequest: Codable, Sendable, Equatable {
    public var extensionID: String
    public var setup: [String: String]
    public var microphone: Bool
    /// Video to the extension, at most 30 fps as in ReplayKit.
    public var fps: Int

    public init(extensionID: String, setup: [String: String] = [:], microphone: Bool = false, fps: Int = 30) {
        self.extensionID = extensionID
        self.setup = setup
        self.microphone = microphone
        self.fps = fps
    }
}

/// A broadcast as the person and the host app see it: state, never samples.
public struct BroadcastStatus: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        case starting
        case live
        case paused
        case finished
        /// Ended by an error: the extension crashed, hung, went over its memory limit,
        /// misbehaved or called finishBroadcast(error:).
        case failed
    }

    public var id: String
    public var extensionID: String
    public var state: State
    public var framesSent: Int
    public var framesDropped: Int
    public var audioPeriodsSent: Int
    /// Bytes of messages sent to the extension: samples stay in the shared surfaces, so this
    /// is about a hundred bytes a frame, not the frame.
    public var messageBytesSent: Int
    /// The extension's peak memory footprint (anonymous memory, resident or swapped; see
    /// ExtensionProcess), in bytes: what the 50 MB limit counts.
    public var extensionPeakMemory: Int
    public var lastError: String?
    public var serviceInfo: [String: String]
    public var broadcastURL: String?

    public init(id: String, extensionID: String, state: State, framesSent: Int = 0, framesDropped: Int = 0,
                audioPeriodsSent: Int = 0, messageBytesSent: Int = 0, extensionPeakMemory: Int = 0, lastError: String? = nil, serviceInfo: [String: String] = [:],
                broadcastURL: String? = nil) {
        self.id = id
        self.extensionID = extensionID
        self.state = state
        self.framesSent = framesSent
        self.framesDropped = framesDropped
        self.audioPeriodsSent = audioPeriodsSent
        self.messageBytesSent = messageBytesSent
        self.extensionPeakMemory = extensionPeakMemory
        self.lastError = lastError
        self.serviceInfo = serviceInfo
        self.broadcastURL = broadcastURL
    }

    public var isOver: Bool { state == .finished || state == .failed }
}
