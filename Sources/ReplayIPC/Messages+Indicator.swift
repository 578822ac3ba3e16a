/// Whether replayd tells the person that capture is on (in `DaemonStatus`): without a
/// notification server nothing on the screen says so, and the person should know that.
public struct IndicatorStatus: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        /// Desktop notifications announce every capture.
        case notifications
        /// Nothing does: nobody is told that capture is on.
        case none
        /// A tray icon (StatusNotifierItem) shows every capture, with Stop and Pause/Resume
        /// (since 2.4; a client of an earlier minor version is told `notifications`).
        case tray
    }

    public var kind: Kind
    /// Why nobody is told (`none`): no notification server, or replayd started with --no-notify.
    public var reason: String?

    public init(kind: Kind, reason: String? = nil) {
        self.kind = kind
        self.reason = reason
    }

    /// What `replay status` and a recording's warning say when nobody is told.
    public static let nobodyIsTold = "nobody is told that capture is on"
}
