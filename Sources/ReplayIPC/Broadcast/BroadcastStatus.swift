/// What a broadcast shows.
public enum BroadcastScope: String, Codable, Sendable, CaseIterable {
    /// The whole screen (protected windows black): what the person broadcasts.
    case screen
    /// Only the host app's own windows, everything else black, as in-app capture: what an
    /// app asks for when it puts itself into a call. Only an app may ask, for itself,
    /// through the picker.
    case app
}

/// Asking replayd to broadcast through an extension.
public struct BroadcastRequest: Codable, Sendable, Equatable {
    public var extensionID: String
    public var setup: [String: String]
    public var microphone: Bool
    /// Video to the extension, at most 30 fps as in ReplayKit.
    public var fps: Int
    /// The whole screen, or only the host app's windows; `.screen` when absent (the field is optional on the wire).
    public var scope: BroadcastScope

    public init(extensionID: String, setup: [String: String] = [:], microphone: Bool = false, fps: Int = 30,
                scope: BroadcastScope = .screen) {
        self.extensionID = extensionID
        self.setup = setup
        self.microphone = microphone
        self.fps = fps
        self.scope = scope
    }

    private enum CodingKeys: String, CodingKey {
        case extensionID, setup, microphone, fps, scope
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        extensionID = try container.decode(String.self, forKey: .extensionID)
        setup = try container.decode([String: String].self, forKey: .setup)
        microphone = try container.decode(Bool.self, forKey: .microphone)
        fps = try container.decode(Int.self, forKey: .fps)
        scope = try container.decodeIfPresent(BroadcastScope.self, forKey: .scope) ?? .screen
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
    /// What it shows: the whole screen or only the host app's windows.
    public var scope: BroadcastScope
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
    /// What counts the extension's memory against its limit, in words: replayd's walk of
    /// /proc, or the kernel. Absent from older daemons.
    public var memoryCounting: String?
    /// The extension's network, in words: its own (reaching only its setup's servers), or the
    /// host's, and why. Absent from older daemons, and before the extension runs.
    public var sandboxNetwork: String?
    public var lastError: String?
    public var serviceInfo: [String: String]
    public var broadcastURL: String?

    public init(id: String, extensionID: String, scope: BroadcastScope = .screen, state: State, framesSent: Int = 0, framesDropped: Int = 0,
                audioPeriodsSent: Int = 0, messageBytesSent: Int = 0, extensionPeakMemory: Int = 0, lastError: String? = nil, serviceInfo: [String: String] = [:],
                broadcastURL: String? = nil) {
        self.id = id
        self.extensionID = extensionID
        self.scope = scope
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

    private enum CodingKeys: String, CodingKey {
        case id, extensionID, scope, state, framesSent, framesDropped, audioPeriodsSent, messageBytesSent, extensionPeakMemory
        case lastError, serviceInfo, broadcastURL, memoryCounting, sandboxNetwork
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        extensionID = try container.decode(String.self, forKey: .extensionID)
        scope = try container.decodeIfPresent(BroadcastScope.self, forKey: .scope) ?? .screen
        state = try container.decode(State.self, forKey: .state)
        framesSent = try container.decode(Int.self, forKey: .framesSent)
        framesDropped = try container.decode(Int.self, forKey: .framesDropped)
        audioPeriodsSent = try container.decode(Int.self, forKey: .audioPeriodsSent)
        messageBytesSent = try container.decode(Int.self, forKey: .messageBytesSent)
        extensionPeakMemory = try container.decode(Int.self, forKey: .extensionPeakMemory)
        lastError = try container.decodeIfPresent(String.self, forKey: .lastError)
        serviceInfo = try container.decode([String: String].self, forKey: .serviceInfo)
        broadcastURL = try container.decodeIfPresent(String.self, forKey: .broadcastURL)
        memoryCounting = try container.decodeIfPresent(String.self, forKey: .memoryCounting)
        sandboxNetwork = try container.decodeIfPresent(String.self, forKey: .sandboxNetwork)
    }
}
