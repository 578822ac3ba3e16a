public import FoundationEssentials
import Dispatch
public import Logging
import NIOCore
import NIOPosix
import ReplayCaptureModel
import ReplayDesktop
public import ReplayIPC
import ReplaySystem
import Synchronization
#if canImport(Glibc)
public import Glibc
#endif

/// replayd: owns capture and the sessions, and serves clients on a Unix socket.
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
        /// The person's own tools (the replay CLI beside replayd): run unmodified by the owner
        /// (`PersonCheck`), they may list, export and delete recordings and answer consent.
        /// Everything else is an app.
        public var trustedExecutables: Set<String>
        public var consent: ConsentBroker.Settings
        /// Port of the loopback consent and preview pages (0: any free one; nil: no pages).
        public var pagesPort: Int?
        /// Reads what a client process is (a system daemon asks its root helper).
        public var inspector: ProcessInspector
        /// Where upload extensions' manifests are looked for, besides the system and user directories.
        public var extensionDirectories: [URL]
        /// What sessions are built from (unit tests' fakes); nil: the `capture` backend's
        /// desktop, a capture process per session, and sandboxed extensions.
        public var parts: SessionParts?
        /// The screen's backend when `parts` is nil: the X display, or the ScreenCast portal.
        public var capture = CaptureChoice.x11
        /// Why `capture` (for `status`): the option that chose it, or what the session looked like.
        public var captureReason = "the default"
        /// Seconds the portal's dialog is waited for before a capture gives up.
        public var screenChoiceTimeout: Double = 60
        /// Bytes of events queued for a client that does not read before it is disconnected.
        public var outboxLimit = ClientOutbox.defaultLimit
        var connectionCaps = ConnectionLimits.Caps.standard
        /// A listening socket handed over by a service manager (socket activation), served
        /// instead of binding `socketPath`; it is the manager's, so it is never unlinked.
        public var inheritedListener: Int32?
        /// Announce captures as desktop notifications on the session bus (`--no-notify`: never).
        public var notifications = true
        /// With no consent agent running, start the desktop's dialog (`replay-ui`) on the session
        /// bus to ask the person (`--no-consent-dialog`: never; a system daemon never does).
        public var consentDialogs = true
        /// Folders of the daemon's own private state (the portal's restore tokens): hidden from
        /// upload extensions' sandboxes, as the store and the socket's folder are.
        public var privateStateDirectories: [URL] = []

        public init(socketPath: String, store: URL, displayName: String?, idleExit: Duration? = nil,
                    mode: DaemonStatus.Mode = .user, ownerUID: UInt32 = getuid(), trustedExecutables: Set<String> = [],
                    consent: ConsentBroker.Settings = .init(), pagesPort: Int? = 0,
                    inspector: ProcessInspector = ProcessInspector(), extensionDirectories: [URL] = []) {
            self.socketPath = socketPath
            self.store = store
            self.displayName = displayName
            self.idleExit = idleExit
            self.mode = mode
            self.ownerUID = ownerUID
            self.trustedExecutables = trustedExecutables
            self.consent = consent
            self.pagesPort = pagesPort
            self.inspector = inspector
            self.extensionDirectories = extensionDirectories
        }

    }

    let configuration: Configuration
    /// Handed to every session; chosen here, once.
    let parts: SessionParts
    let store: RecordingStore
    let logger: Logger
    let consent: ConsentBroker
    /// How the desktop names apps (their `.desktop` entries), for prompts and the indicator.
    let desktopEntries: DesktopEntries
    let captureMonitor = CaptureMonitor()
    /// Tells the person who captures their screen (desktop notifications with a Stop action).
    let indicator: any CaptureIndicator
    /// Pauses and resumes recordings, and tells the indicator.
    let pausing: SessionPausing
    let protectedWindows = ProtectedWindows()
    let previews = PreviewTokens()
    let windows: WindowOwnership
    let catalog: ExtensionCatalog
    let pickers = BroadcastPickers()
    let pages: LoopbackPages
    private let pagesAddress = PagesAddress()
    private let clients: ClientListener
    /// One thread reads and writes every client's connection and the pages' too.
    private let eventLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    /// Happens when the last client hangs up during a shutdown.
    private let clientsGone = Completion<Void>()
    /// A daemon started on demand has been idle for its limit (`watchIdleness`): it stops.
    let idled = Completion<Void>()
    private let limits: ConnectionLimits
    private let personCheck: PersonCheck
    /// Warnings about admitted or refused clients, a few a second at most.
    private let admissionWarnings = Mutex(RateLimit(perSecond: 5))
    /// Warnings about connections closed for what they sent (malformed requests above all),
    /// shared by every connection: a client can open thousands a second, each with one.
    private let refusalWarnings = Mutex(RateLimit(perSecond: 5))

    enum ClientWarning {
        case admission
        case refusal
    }
    let state = Mutex(State())
    /// The background watches, while `run()` runs (Daemon+Watchers).
    let watches = Mutex<Watches?>(nil)

    struct State {
        var sessions: [String: any RecordingControl] = [:]
        /// Running broadcasts; a finished one moves to `finishedBroadcasts` as its final status.
        var broadcasts: [String: BroadcastSession] = [:]
        var finishedBroadcasts: [BroadcastStatus] = []
        var latestBroadcast: String?
        /// Which process made each recording an app started: only it may discard or preview it.
        var appRecordings: [String: PeerIdentity] = [:]
        /// The person's clip buffer: it lives in the daemon, not in the connection that started it.
        var personClipBuffer: (any RecordingControl)?
        /// Places for captures, per app and in all.
        var quota = CaptureQuota(physicalMemory: ProcessMemory.physical)
        var connections = 0
        var nextConnection = 0
        /// When a client or a session last came, started or went, on `parts.timers`' clock.
        var lastActivity = Int64(0)
        var stopping = false

        /// No recording, clip buffer or broadcast is running.
        var hasNoSessions: Bool { sessions.isEmpty && broadcasts.values.allSatisfy { $0.status.isOver } }
    }

    /// Opens the store and binds the socket; after this, clients can connect.
    public init(configuration: Configuration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        if let parts = configuration.parts {
            self.parts = parts
        } else {
            guard var launcher = ReplayCaptureLauncher.besideOwnExecutable() else {
                throw DaemonError(code: .internalError, message: "replay-capture is neither beside replayd nor in ../lib/openreplaykit "
                    + "(\(CommandLine.arguments.first ?? "replayd")): replayd runs every capture in it")
            }
            launcher.logLevel = logger.logLevel.rawValue
            // Its movie is handed to it: the store, and replayd's own state (the portal's
            // tokens), are not its to open. (Its sockets are reached by connecting, which
            // Landlock leaves alone, so the runtime folder stays open to it.)
            launcher.hidden = ([configuration.store] + configuration.privateStateDirectories).map(\.path)
            let timers = DispatchTimers()
            launcher.timers = timers
            parts = SessionParts(desktop: configuration.capture.desktop(displayName: configuration.displayName),
                                 captures: CaptureProcesses(launcher: launcher),
                                 extensions: SandboxedExtensionHost(logger: logger, timers: timers), timers: timers)
        }
        store = try RecordingStore(directory: configuration.store)
        indicator = configuration.notifications
            ? TrayIndicator.connect(busAddress: nil, fallback: DesktopNotifications.connect(busAddress: nil, timers: parts.timers, logger: logger),
                                    timers: parts.timers, logger: logger)
            : NoCaptureIndicator(reason: "replayd was started with --no-notify")
        pausing = SessionPausing(indicator: indicator, logger: logger)
        let pagesAddress = self.pagesAddress
        var consentSettings = configuration.consent
        consentSettings.timers = parts.timers
        let desktopEntries = DesktopEntries(environment: ProcessInfo.processInfo.environment)
        self.desktopEntries = desktopEntries
        // The system daemon's user has no session bus of the person's to start a program on.
        let dialogs = configuration.consentDialogs && configuration.mode == .user
            ? SessionBusDialogs(busAddress: nil, socketPath: configuration.socketPath, logger: logger) : nil
        consent = ConsentBroker(settings: consentSettings, nameApp: desktopEntries.app(executable:), dialogs: dialogs) { request, token in
            // Started by the connection that asks (`awaitConsent`) before it asks.
            pagesAddress.started.map { "\($0)/consent/\(request)?token=\(token)" }
        }
        windows = WindowOwnership(displayName: configuration.displayName)
        catalog = ExtensionCatalog(directories: configuration.extensionDirectories + ExtensionCatalog.defaultDirectories(),
                                   logger: logger)
        let pages = LoopbackPages(consent: consent, previews: previews, store: store, eventLoop: eventLoop, logger: logger)
        self.pages = pages
        var descriptors = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &descriptors)
        let caps = configuration.connectionCaps.fitting(descriptors: Int(clamping: descriptors.rlim_cur))
        if let port = configuration.pagesPort {
            pagesAddress.serve { try await pages.start(port: port, connections: caps.pages) }
        }
        let socketDirectory = URL(fileURLWithPath: configuration.socketPath).deletingLastPathComponent()
        let listener: Int32
        if configuration.mode == .system {
            // Clients of every user connect; what each may do is decided per request.
            try FileManager.default.createDirectory(at: socketDirectory, withIntermediateDirectories: true)
            listener = try configuration.inheritedListener
                ?? UnixSocket.listen(path: configuration.socketPath, mode: 0o666, backlog: 128)
        } else {
            try ReplayPaths.makePrivateDirectory(socketDirectory)
            listener = try configuration.inheritedListener ?? UnixSocket.listen(path: configuration.socketPath, backlog: 128)
        }
        clients = ClientListener(listener: listener, inherited: configuration.inheritedListener != nil, timers: parts.timers, logger: logger)
        limits = ConnectionLimits(caps: caps)
        personCheck = PersonCheck(ownerUID: configuration.ownerUID, trustedExecutables: configuration.trustedExecutables)
        pages.attach(self)
    }

    /// The capture backend and why, for the person's `status`.
    var captureInfo: CaptureBackendInfo {
        var remembered: Bool?
        if case .portal(let tokens) = configuration.capture { remembered = tokens.monitor.token != nil }
        return CaptureBackendInfo(backend: parts.desktop.name, reason: configuration.captureReason, remembersScreenChoice: remembered)
    }

    /// Whether the portal's dialog will ask the person to choose what `area` captures: no
    /// token is kept for that kind of choice. Nil for X11, which has no dialog.
    func portalWillAsk(for area: CaptureArea?) -> Bool? {
        guard case .portal(let tokens) = configuration.capture else { return nil }
        return tokens.keeper(for: ScreenCastSource(for: ScreenArea(area))).token == nil
    }

    /// Forgets the screen and window the person chose in the portal's dialog: the next capture asks again.
    func forgetScreenChoice() {
        if case .portal(let tokens) = configuration.capture { tokens.forget() }
    }

    /// The loopback pages' base URL (started on first use); nil with `--no-pages`.
    func pagesBaseURL() async throws -> String? { try await pagesAddress.url() }

    /// Serves clients until `shutdown()`, holding no thread while it waits: each connection is
    /// a child task of one task group, which this task owns, so cancelling it (the service
    /// group's SIGTERM) reaches every connection.
    public func run() async {
        logger.info("replayd listening", metadata: [
            "socket": "\(configuration.socketPath)", "store": "\(store.directory.path)", "mode": "\(configuration.mode.rawValue)",
            "pages": "\(pagesAddress.summary)", "capture": "\(parts.desktop.name)",
        ])
        startWatches()
        let (arrivals, arrived) = AsyncStream.makeStream(of: AcceptedClient.self)
        clients.serve(admit: { [self] fd in admit(fd) }, accepted: { client in
            // One that comes as the run is cancelled has nobody to serve it.
            if case .terminated = arrived.yield(client) { close(client.socket) }
        }, stopped: { arrived.finish() })
        await withDiscardingTaskGroup { connections in
            for await client in arrivals {
                connections.addTask { [eventLoop, logger] in await client.serve(on: eventLoop, logger: logger) }
            }
            // The listener has stopped: the connections still open end what they started and close.
            connections.cancelAll()
        }
        stopWatches()
        // The pages close their connections on the event loop before it ends (stopped here
        // too, for a listener that ended without a shutdown: its socket gone bad).
        pages.stop()
        await pages.finished()
        try? await eventLoop.shutdownGracefully()
        logger.info("replayd stopped")
    }

    /// Who a new client is, from the kernel, and whether it may stay (the connection caps).
    private func admit(_ fd: Int32) -> (@Sendable (any Channel) -> ClientConnection)? {
        var facts: ProcessFacts?
        let peer = try? PeerIdentity(socket: fd) { [inspector = configuration.inspector] pid in
            facts = inspector.facts(of: pid)
            return facts.flatMap(Self.executableName(of:))
        }
        let verdict = peer.map { personCheck.verdict(uid: $0.uid, facts: facts) } ?? .app(mistrusted: nil)
        let isPerson = verdict == .person
        if case .app(let why?) = verdict { logRateLimited("a replay command is not trusted as the person: \(why)", peer: peer) }
        let uid = peer?.uid ?? UInt32.max
        if let refusal = limits.admit(uid: uid, isPerson: isPerson) {
            logRateLimited("refused a client: \(refusal)", peer: peer)
            ClientListener.refuse(fd, code: .busy, message: refusal)
            return nil
        }
        let number = state.withLock {
            $0.connections += 1
            $0.nextConnection += 1
            $0.lastActivity = parts.timers.now()
            return $0.nextConnection
        }
        noteActivity()
        updateProbes()
        return { [self] channel in
            ClientConnection(daemon: self, channel: ClientOutbox(channel: channel, limit: configuration.outboxLimit),
                             number: number, peer: peer, role: isPerson ? .person : .app,
                             whyNotPerson: { if case .app(let why) = verdict { why } else { nil } }())
        }
    }

    /// How a client's executable is named, to consent policies, prompts and the indicator. A
    /// process outside the daemon's user and mount namespaces (`unshare -Urm`, a sandbox) can
    /// bind any program over any path, so the path it shows is not who it is: it is named by
    /// what it is, the file's device and inode, and said to be in a namespace of its own. A
    /// policy naming the path never matches that.
    static func executableName(of facts: ProcessFacts) -> String? {
        guard let path = facts.executable else { return nil }
        guard !facts.sharesNamespaces else { return path }
        let file = facts.executableFile.map { "device \($0.device) inode \($0.inode)" } ?? "an unreadable file"
        return "\(path) [in a namespace of its own: \(file)]"
    }

    /// A warning about a client, a few a second at most: a flood of clients is a few lines.
    func logRateLimited(_ message: String, peer: PeerIdentity?, _ kind: ClientWarning = .admission) {
        let admitted = switch kind {
        case .admission: admissionWarnings.withLock { $0.admit() }
        case .refusal: refusalWarnings.withLock { $0.admit() }
        }
        guard let unsaid = admitted else { return }
        let held = unsaid > 0 ? " (\(unsaid) more before it not logged)" : ""
        logger.warning("\(message)\(held)", metadata: ["peer": "\(peer?.description ?? "unknown peer")"])
    }

    /// A connection's clean-up is done: its place is free again.
    func connectionClosed(_ connection: ClientConnection) {
        limits.release(uid: connection.peer?.uid ?? UInt32.max, isPerson: connection.role == .person)
        let last = state.withLock { state in
            state.connections -= 1
            state.lastActivity = parts.timers.now()
            return state.connections == 0 && state.stopping
        }
        noteActivity()
        updateProbes()
        if last { clientsGone.complete(()) }
    }

    /// Stops accepting, ends every recording (keeping it) and returns when their files are
    /// closed, holding no thread while it waits.
    public func shutdown() async {
        let (sessions, broadcasts) = state.withLock { state in
            state.stopping = true
            return (Array(state.sessions.values), Array(state.broadcasts.values))
        }
        logger.info("shutting down", metadata: ["recordings": "\(sessions.count)", "broadcasts": "\(broadcasts.count)"])
        for broadcast in broadcasts { broadcast.stop() }
        for broadcast in broadcasts { _ = await broadcast.finished() }
        for session in sessions { session.stop() }
        for session in sessions { _ = await session.finished() }
        if configuration.inheritedListener == nil { unlink(configuration.socketPath) }
        // Give each recording's client a moment to receive its summary and hang up.
        if !sessions.isEmpty && state.withLock({ $0.connections > 0 }) { _ = await clientsGone.finished(within: 2, on: parts.timers) }
        clients.stop()
        pages.stop()
        // The recordings' ends are announced before the daemon goes.
        await indicator.close()
    }

    /// Takes `session`'s place in the quota and lists it; `unregister` gives both back.
    func register(_ session: any RecordingControl, by owner: CaptureQuota.Owner, clipBytes: Int = 0,
                  diskBytes: Int64 = 0) throws(DaemonError) {
        let freeDisk = diskBytes > 0 ? store.freeBytes() : nil
        try state.withLock { state throws(DaemonError) in
            guard !state.stopping else { throw DaemonError(code: .busy, message: "replayd is shutting down") }
            if let why = state.quota.admit(session.id, owner: owner, clipBytes: clipBytes, diskBytes: diskBytes, freeDisk: freeDisk) {
                throw DaemonError(code: .quotaExceeded, message: why)
            }
            state.sessions[session.id] = session
        }
        captureMonitor.begin(.recording(session.id))
    }

    func unregister(_ session: any RecordingControl) {
        state.withLock {
            $0.sessions[session.id] = nil
            $0.quota.release(session.id)
            $0.lastActivity = parts.timers.now()
        }
        noteActivity()
        captureMonitor.end(.recording(session.id))
    }

    /// A place in the quota for a capture listed elsewhere (an app's in-app capture).
    func admitCapture(_ id: String, by owner: CaptureQuota.Owner) throws(DaemonError) {
        try state.withLock { state throws(DaemonError) in
            if let why = state.quota.admit(id, owner: owner) { throw DaemonError(code: .quotaExceeded, message: why) }
        }
    }

    func releaseCapture(_ id: String) {
        state.withLock { $0.quota.release(id) }
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

    /// The running recording named `id`, or with nil the only one running.
    func runningRecording(_ id: String?) throws(DaemonError) -> any RecordingControl {
        let sessions = state.withLock { $0.sessions }
        if let id {
            guard let session = sessions[id], !session.isFinished else {
                throw DaemonError(code: .notFound, message: "no recording '\(id)' is running")
            }
            return session
        }
        let running = sessions.values.filter { !$0.isFinished }
        guard let only = running.first else { throw DaemonError(code: .notFound, message: "no recording is running") }
        guard running.count == 1 else {
            throw DaemonError(code: .notFound,
                              message: "\(running.count) recordings are running; name one: \(running.map(\.id).sorted().joined(separator: ", "))")
        }
        return only
    }
}
