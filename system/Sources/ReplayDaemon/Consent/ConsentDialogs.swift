import FoundationEssentials
import Dispatch
import Logging
import ReplayDBus

/// Starts the desktop's dialog program when a question has nobody to ask. The program comes
/// up as a consent agent of its own (a connection to this daemon, checked as the person's
/// tool), and the broker hands it the question then.
protocol ConsentDialogs: Sendable {
    /// Asks for the dialog; `failed` is called once, with why, if it cannot be started (nil: it
    /// was started, or was running already), on a thread of its own.
    func summon(_ failed: @escaping @Sendable (String?) -> Void)
}

/// `replay-ui` on the person's session bus, started on demand by the bus as the portal's
/// backends are (D-Bus activation of `org.openreplaykit.UI`): an `org.freedesktop.Application`
/// `Open` call naming this daemon's socket. The daemon never runs a window; the program exits
/// once it shows nothing.
///
/// The call waits for the program to start (seconds, cold): it is made on a serial queue of
/// its own, never on a thread a client waits on. The bus connection is made at the first
/// summons and kept while it works.
final class SessionBusDialogs: ConsentDialogs, @unchecked Sendable {
    // @unchecked: `connection` is touched only on `queue`.
    static let name = "org.openreplaykit.UI"
    static let path = "/org/openreplaykit/UI"

    private let queue = DispatchQueue(label: "replayd.dialogs")
    private var connection: DBusConnection?
    private let busAddress: String?
    private let socketPath: String
    private let logger: Logger

    /// - Parameter busAddress: the session bus (nil: this login session's).
    init(busAddress: String?, socketPath: String, logger: Logger) {
        self.busAddress = busAddress
        self.socketPath = socketPath
        self.logger = logger
    }

    func summon(_ failed: @escaping @Sendable (String?) -> Void) {
        queue.async { [self] in
            do throws(DBusError) {
                let connection: DBusConnection
                if let kept = self.connection {
                    connection = kept
                } else {
                    connection = try DBusConnection(address: busAddress)
                }
                self.connection = connection
                // Open(uris, platform data): the socket to answer on, as a file URI.
                _ = try connection.call(
                    destination: Self.name, path: Self.path, interface: "org.freedesktop.Application", member: "Open",
                    [.array(element: "s", [.string(URL(fileURLWithPath: socketPath).absoluteString)]), .options([:])],
                    timeout: 30)
                failed(nil)
            } catch {
                // A broken connection is made anew next time (the bus may have restarted).
                if error.name.isEmpty { connection = nil }
                logger.info("the desktop's consent dialog could not be started", metadata: ["why": "\(error)"])
                failed(Self.explain(error))
            }
        }
    }

    /// The bus's answer in a person's words.
    private static func explain(_ error: DBusError) -> String {
        switch error.name {
        case "org.freedesktop.DBus.Error.ServiceUnknown":
            "replay-ui is not installed for this session's bus (no \(name).service)"
        case "org.freedesktop.DBus.Error.Spawn.ChildExited", "org.freedesktop.DBus.Error.Spawn.ChildSignaled",
             "org.freedesktop.DBus.Error.NoReply":
            "replay-ui exited as it started (no display?): \(error.message)"
        case "", "org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.TimedOut":
            error.timedOut ? "replay-ui did not answer within 30 seconds" : "\(error)"
        default:
            "\(error)"
        }
    }
}
