import ReplayIPC

// The SDK's own words for what the daemon reports. The wire's types (ReplayIPC) stay inside
// the SDK; words that later releases may add to (reasons, states, scopes) are structs with
// static members rather than enums, so an app's `switch` never stops compiling.

/// Why the screen counts as captured (`CaptureState`).
public struct CaptureReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// The screen is being recorded.
    public static let screenRecording = CaptureReason(rawValue: "screenRecording")
    /// The screen goes out live through an upload extension.
    public static let broadcast = CaptureReason(rawValue: "broadcast")
    /// A second screen mirrors this one.
    public static let mirroring = CaptureReason(rawValue: "mirroring")
    /// Another app streams its own windows; this app's may be next to them.
    public static let inAppCapture = CaptureReason(rawValue: "inAppCapture")
}

/// Whether the screen is captured, and why.
public struct CaptureStatus: Sendable, Equatable {
    /// Empty when nothing captures the screen.
    public let reasons: [CaptureReason]
    public var isCaptured: Bool { !reasons.isEmpty }

    public init(reasons: [CaptureReason]) {
        self.reasons = reasons
    }

    init(_ status: ReplayIPC.CaptureStatus) {
        reasons = status.reasons.map { CaptureReason(rawValue: $0.rawValue) }
    }
}

/// What a broadcast shows.
public struct BroadcastScope: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// The whole screen (protected windows black).
    public static let screen = BroadcastScope(rawValue: "screen")
    /// Only this app's own windows, everything else black, as in-app capture.
    public static let app = BroadcastScope(rawValue: "app")
}

/// A broadcast the person started from this app's picker, as the host app sees it: its
/// state, never its samples.
public struct BroadcastStatus: Sendable, Equatable {
    /// Where a broadcast is in its life.
    public struct State: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let starting = State(rawValue: "starting")
        public static let live = State(rawValue: "live")
        public static let paused = State(rawValue: "paused")
        public static let finished = State(rawValue: "finished")
        /// Ended by an error: the extension crashed, hung, went over its memory limit,
        /// misbehaved or gave up (`lastError` says which).
        public static let failed = State(rawValue: "failed")
    }

    public let id: String
    /// The upload extension's id (its manifest's).
    public let extensionID: String
    public let scope: BroadcastScope
    public let state: State
    public let framesSent: Int
    public let framesDropped: Int
    /// What the extension tells the host app (viewers, its link to the server…).
    public let serviceInfo: [String: String]
    public let broadcastURL: String?
    public let lastError: String?

    /// Finished or failed: no update follows.
    public var isOver: Bool { state == .finished || state == .failed }

    init(_ status: ReplayIPC.BroadcastStatus) {
        id = status.id
        extensionID = status.extensionID
        scope = BroadcastScope(rawValue: status.scope.rawValue)
        state = State(rawValue: status.state.rawValue)
        framesSent = status.framesSent
        framesDropped = status.framesDropped
        serviceInfo = status.serviceInfo
        broadcastURL = status.broadcastURL
        lastError = status.lastError
    }
}

/// A corner of the recording, for the camera's picture.
public enum CameraCorner: String, Sendable, CaseIterable {
    case topLeft, topRight, bottomLeft, bottomRight

    var wire: CameraOverlay.Corner {
        switch self {
        case .topLeft: .topLeft
        case .topRight: .topRight
        case .bottomLeft: .bottomLeft
        case .bottomRight: .bottomRight
        }
    }
}
