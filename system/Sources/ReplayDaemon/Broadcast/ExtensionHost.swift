public import Logging
public import ReplayCaptureModel
public import ReplayIPC
public import ReplaySystem

/// Starts upload extensions for broadcasts. The real host runs each in a bubblewrap sandbox
/// (`SandboxedExtensionHost`); sessions see only this, so their logic is tested with a fake.
public protocol ExtensionHost: Sendable {
    /// - Parameters:
    ///   - hidden: directories the extension must not see (the store, the daemon's sockets).
    ///   - writable: directories the person chose for it (setup fields of kind `directory`).
    ///   - network: the TCP ports it may connect to (the servers its setup names).
    ///   - redaction: what hides its secret setup values in every line it prints.
    ///   - started: called once, with the running extension or why it could not start
    ///     (nothing left running then). Nothing waits for the start meanwhile.
    func launch(_ manifest: ExtensionManifest, hidden: [String], writable: [String], network: ExtensionNetworkPolicy,
                redaction: SecretRedaction, started: @escaping @Sendable (Result<any ExtensionLink, DaemonError>) -> Void)
    /// Who counts an extension's memory, for `replay broadcast status`.
    var memoryCounting: String { get }
}

/// What the extension said: one message's bytes, or the end of its connection.
public enum ExtensionUtterance: Sendable {
    case message([UInt8])
    /// It closed its end (it exited, crashed, or dropped the connection).
    case closed
    /// What arrived is not a message (a read error, descriptors it may not send).
    case unreadable(String)
}

/// One running extension as its broadcast sees it: messages both ways, its memory, its end.
public protocol ExtensionLink: AnyObject, Sendable {
    /// Sends one framed message (with descriptors: the hello and its surfaces). False when it
    /// could not go out in time: the sample is dropped, capture never waits.
    func send(_ bytes: [UInt8], descriptors: [Int32]) -> Bool
    /// Delivers what the extension says, in order, until `.closed`, `.unreadable` or `close()`.
    func listen(_ handler: @escaping @Sendable (ExtensionUtterance) -> Void)
    /// Memory it cannot give back, summed over its processes, and how many processes it
    /// runs: what the watchdog checks against the limits.
    func usage() -> ExtensionUsage
    /// Ends it at once.
    func kill()
    /// Calls `handler` once it has exited and been reaped, with how it ended ("crashed (SIGSEGV)").
    func onExit(_ handler: @escaping @Sendable (String) -> Void)
    /// Stops listening and closes the connection.
    func close()
    /// Its network, in words: its own, or the host's and why (`replay broadcast status`).
    var sandboxNetwork: String { get }
}

/// Upload extensions in bubblewrap, as `ExtensionProcess`; what they write on standard error
/// goes, rate-limited, into `logger`.
public struct SandboxedExtensionHost: ExtensionHost {
    let logger: Logger
    /// What the start's and the end's waits are timed by.
    let timers: any Timers

    public init(logger: Logger, timers: any Timers = DispatchTimers()) {
        self.logger = logger
        self.timers = timers
    }

    public func launch(_ manifest: ExtensionManifest, hidden: [String], writable: [String], network: ExtensionNetworkPolicy,
                       redaction: SecretRedaction, started: @escaping @Sendable (Result<any ExtensionLink, DaemonError>) -> Void) {
        ExtensionProcess.start(manifest: manifest, hidden: hidden, writable: writable, network: network, redaction: redaction,
                               timers: timers, logger: logger) { result in
            started(result.map { $0 })
        }
    }

    public var memoryCounting: String { ExtensionProcess.memoryCounting }
}
