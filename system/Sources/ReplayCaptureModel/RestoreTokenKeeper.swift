public import FoundationEssentials
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The ScreenCast portal's restore token: the person's earlier choice, so the desktop need
/// not ask again. It is the daemon's secret (whoever holds it can capture the screen without
/// a dialog), so it is kept only in memory or in a file of mode 0600, and never given out.
public final class RestoreTokenKeeper: Sendable {
    private let file: URL?
    private let current: Mutex<String?>

    /// - Parameter file: where to keep the token across restarts; nil keeps it in memory only.
    public init(file: URL? = nil) {
        self.file = file
        let stored = file.flatMap { try? String(contentsOf: $0, encoding: .utf8) }?
            .trimmingWhitespace()
        current = Mutex(stored?.isEmpty == false ? stored : nil)
    }

    public var token: String? { current.withLock { $0 } }

    /// Keeps the newest token: the portal may hand out a new one on every Start.
    public func keep(_ token: String) {
        guard !token.isEmpty else { return }
        current.withLock { $0 = token }
        guard let file else { return }
        // Its folder is private: the token opens the screen without asking.
        guard (try? ReplayPaths.makePrivateDirectory(file.deletingLastPathComponent())) != nil else { return }
        let temporary = file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent).new")
        _ = FileManager.default.createFile(atPath: temporary.path, contents: Data((token + "\n").utf8),
                                       attributes: [.posixPermissions: 0o600])
        _ = rename(temporary.path, file.path)
    }

    /// Forgets the token: the desktop will ask again.
    public func forget() {
        current.withLock { $0 = nil }
        if let file { try? FileManager.default.removeItem(at: file) }
    }
}

/// The person's two remembered choices: a token restores only the kind of source it was
/// given for, so a monitor and a window are kept apart.
public struct ScreenCastTokens: Sendable {
    public let monitor: RestoreTokenKeeper
    public let window: RestoreTokenKeeper

    public init(monitor: RestoreTokenKeeper = RestoreTokenKeeper(), window: RestoreTokenKeeper = RestoreTokenKeeper()) {
        self.monitor = monitor
        self.window = window
    }

    public func keeper(for source: ScreenCastSource) -> RestoreTokenKeeper {
        source == .monitor ? monitor : window
    }

    /// Forgets both: the desktop asks again for either.
    public func forget() {
        monitor.forget()
        window.forget()
    }
}
