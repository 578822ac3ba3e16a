public import Foundation
public import Logging
public import ReplayIPC
import ReplayCapture
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// replayd: owns capture, accepts clients on a Unix socket, one thread per connection.
public final class Daemon: Sendable, PickerBackend {
    public struct Configuration: Sendable {
        public var socketPath: String
        public var store: URL
        /// The X display to capture; nil uses `$DISPLAY` when a recording starts.
        public var displayName: String?
        /// Exit after this long with no client and no recording (for daemons started on demand).
        public var idleExit: Duration?
        public var mode: DaemonStatus.Mode
        /// The person the daemon serves: their own tools may read the store.
        public var ownerUID: UInt32
        /// The person's own tools (the replay CLI beside replayd): run by the owner, they may
        /// list, export and delete recordings and answer consent. Everything else is an app.
        public var trustedExecutables: Set<String>
        public var consent: ConsentBroker.Settings
        /// Port of the loopback consent and preview pages (0: any free one; nil: no pages).
        public var pagesPort: Int?
        public var identifier: ExecutableIdentifier
        /// Where upload extensions' manifests are looked for, besides the system and user directories.
        public var extensionDirectories: [URL]
        /// What sessions capture with and write to; nil: the X11 display `displayName`, PulseAudio and FFmpeg.
        public var parts: SessionParts?

        public init(socketPath: String, store: URL, displayName: String?, idleExit: Duration? = nil,
                    mode: DaemonStatus.Mode = .user, ownerUID: UInt32 = getuid(), trustedExecutables: Set<String> = [],
                    consent: ConsentBroker.Settings = .init(), pagesPort: Int? = 0,
                    identifier: ExecutableIdentifier = ExecutableIdentifier(), extensionDirectories: [URL] = []) {
            self.socketPath = socketPath
            self.store = store
            self.displayName = displayName
            self.idleExit = idleExit
            self.mode = mode
            self.ownerUID = ownerUID
            self.trustedExecutables = trustedExecutables
            self.consent = consent
            self.pagesPort = pagesPort
            self.identifier = identifier
            self.extensionDirectories = extensionDirectories
        }

        var sessionParts: SessionParts { parts ?? SessionParts(capture: X11CaptureBackend(displayName: displayName)) }
    }

    let configuration: Configuration
    /// Handed to every session; chosen here, once.
    let parts: SessionParts
    let store: RecordingStore
    let logger: Logger
    let consent: ConsentBroker
    let captureMonitor = CaptureMonitor()
    let protectedWindows = ProtectedWindows()
    let previews = PreviewTokens()
    let windows: WindowOwnership
    let catalog: ExtensionCatalog
    let pickers = BroadcastPickers()
    private let pages: LoopbackPages
    private let pagesAddress = PagesAddress()
    private let listener: Int32
    let state = Mutex(State())

    struct State {
        var sessions: [String: RecordingSession] = [:]
        var broadcasts: [String: BroadcastSession] = [:]
        var latestBroadcast: String?
        /// Which process made each recording an app started: only it may discard or preview it.
        var appRecordings: [String: PeerIdentity] = [:]
        var connections = 0
        var nextConnection = 0
        var lastActivity = MonotonicClock.nanoseconds()
        var stopping = false
    }

    /// Opens the store and binds the socket; after this, clients can connect.
    public init(configuration: Configuration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        parts = configuration.sessionParts
        store = try RecordingStore(directory: configuration.store)
        let pagesAddress = self.pagesAddress
        consent = ConsentBroker(settings: configuration.consent) { request, token in
            (try? pagesAddress.url()).flatMap { $0 }.map { "\($0)/consent/\(request)?token=\(token)" }
        }
        windows = WindowOwnership(displayName: configuration.displayName)
        catalog = ExtensionCatalog(directories: configuration.extensionDirectories + ExtensionCatalog.defaultDirectories(),
                                   logger: logger)
        let pages = LoopbackPages(consent: consent, previews: previews, store: store, logger: logger)
        self.pages = pages
        if let port = configuration.pagesPort {
            pagesAddress.serve { try pages.start(port: port) }
            // A port of the person's choosing is bound now, so a clash is reported at start.
            if port != 0 { _ = try pagesAddress.url() }
        }
        let socketDirectory = URL(fileURLWithPath: configuration.socketPath).deletingLastPathComponent()
        if configuration.mode == .system {
            // Clients of every user connect; what each may do is decided per request.
            try FileManager.default.createDirectory(at: socketDirectory, withIntermediateDirectories: true)
            listener = try UnixSocket.listen(path: configuration.socketPath, mode: 0o666)
        } else {
            try ReplayPaths.makePrivateDirectory(socketDirectory)
            listener = try UnixSocket.listen(path: configuration.socketPath)
        }
        pages.attach(self)
    }

    /// The loopback pages' base URL (started on first use); nil with `--no-pages`.
    func pagesBaseURL() throws -> String? { try pagesAddress.url() }

    /// Serves clients until `shutdown()`.
    public func run() {
        logger.info("replayd listening", metadata: [
            "socket": "\(configuration.socketPath)", "store": "\(store.directory.path)", "mode": "\(configuration.mode.rawValue)",
            "pages": "\(pagesAddress.summary)",
        ])
        if let idle = configuration.idleExit { watchIdleness(limit: idle) }
        watchFocus()
        watchMirroring()
        while true {
            let fd: Int32
            do {
                fd = try UnixSocket.accept(listener)
            } catch {
                if state.withLock({ $0.stopping }) { break }
                logger.warning("accept failed: \(error)")
                continue
            }
            let channel = MessageChannel(fd: fd, limits: .requests)
            let number = state.withLock {
                $0.connections += 1
                $0.nextConnection += 1
                $0.lastActivity = MonotonicClock.nanoseconds()
                return $0.nextConnection
            }
            Thread.detachNewThread { [self] in
                ClientConnection(daemon: self, channel: channel, number: number).serve()
                state.withLock {
                    $0.connections -= 1
                    $0.lastActivity = MonotonicClock.nanoseconds()
                }
            }
        }
        logger.info("replayd stopped")
    }

    /// Stops accepting, ends every recording (keeping it) and returns when their files are closed.
    public func shutdown() {
        let (sessions, broadcasts) = state.withLock { state in
            state.stopping = true
            return (Array(state.sessions.values), Array(state.broadcasts.values))
        }
        logger.info("shutting down", metadata: ["recordings": "\(sessions.count)", "broadcasts": "\(broadcasts.count)"])
        for broadcast in broadcasts { broadcast.stop() }
        for broadcast in broadcasts { _ = broadcast.waitUntilFinished() }
        for session in sessions { session.stop() }
        for session in sessions { _ = session.waitUntilFinished() }
        unlink(configuration.socketPath)
        // Give each recording's client a moment to receive its summary and hang up.
        let deadline = MonotonicClock.nanoseconds() + 2_000_000_000
        while !sessions.isEmpty && state.withLock({ $0.connections > 0 }) && MonotonicClock.nanoseconds() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        pages.stop()
    }

    func register(_ session: RecordingSession) -> Bool {
        state.withLock { state in
            guard !state.stopping else { return false }
            state.sessions[session.id] = session
            captureMonitor.begin(.recording(session.id))
            return true
        }
    }

    func unregister(_ session: RecordingSession) {
        state.withLock {
            $0.sessions[session.id] = nil
            $0.lastActivity = MonotonicClock.nanoseconds()
        }
        captureMonitor.end(.recording(session.id))
    }

    func recordAppRecording(_ id: String, by peer: PeerIdentity) {
        state.withLock { $0.appRecordings[id] = peer }
    }

    /// True when `peer` is the very process (pid and start time) that made recording `id`.
    func isAppRecording(_ id: String, madeBy peer: PeerIdentity) -> Bool {
        state.withLock { state in
            state.appRecordings[id]?.isSameProcess(as: peer) ?? false
        }
    }

    func forgetAppRecording(_ id: String) {
        _ = state.withLock { $0.appRecordings.removeValue(forKey: id) }
    }

    var activeRecordings: [String] { state.withLock { Array($0.sessions.keys).sorted() } }
}
