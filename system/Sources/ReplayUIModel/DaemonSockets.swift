public import FoundationEssentials
import ReplaySystem

/// The daemons the dialog answers for: the person's own replayd (its default socket, or the
/// one `$OPENREPLAYKIT_SOCKET` names in the program's environment) and the system's. Whoever
/// starts it on the session bus names a socket; any other is refused, so another program
/// cannot have the dialog ask the person on behalf of a daemon of its own.
public struct DaemonSockets: Sendable, Equatable {
    public static let system = "/run/openreplaykit/replayd.sock"

    public let accepted: [String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        var paths = [ReplayPaths.defaultSocket(environment: environment).path, Self.system]
        if let named = environment[ReplayPaths.socketVariable], !named.isEmpty { paths.insert(named, at: 0) }
        accepted = paths.map(Self.normalized)
    }

    /// The socket to answer on, for one the caller named: nil if it is none of ours.
    public func accept(_ path: String) -> String? {
        let path = Self.normalized(path)
        return accepted.contains(path) ? path : nil
    }

    /// The socket when the person starts the program themselves: the first of ours.
    public var preferred: String { accepted[0] }

    private static func normalized(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }
}
