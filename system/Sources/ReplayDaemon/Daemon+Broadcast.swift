import FoundationEssentials
import Logging
import ReplayCaptureModel
import ReplayDesktop
import ReplayIPC
import ReplayLoopbackServer
import ReplaySystem
import Synchronization

/// Broadcasts: started by the person (CLI) or through an app's picker, one session each.
extension Daemon {
    /// Starts a broadcast through an installed extension: throws at once what is wrong with
    /// the request; else `started` gets its status once the extension is live, or why it
    /// could not start (a message for the person). Nothing waits meanwhile.
    /// - Parameters:
    ///   - host: the app whose picker started it, which then gets its status on `hostChannel`.
    func startBroadcast(_ asked: BroadcastRequest, host: PeerIdentity? = nil, hostChannel: ClientOutbox? = nil,
                        started: @escaping @Sendable (Result<BroadcastStatus, DaemonError>) -> Void) throws(DaemonError) {
        var request = asked
        guard let info = catalog.find(request.extensionID) else {
            let installed = catalog.list().map(\.manifest.id)
            throw ClientConnection.Refusal(code: .notFound, message: "no extension '\(request.extensionID)' is installed"
                + (installed.isEmpty ? "" : " (installed: \(installed.joined(separator: ", ")))"))
        }
        // A field left empty gets its default: what the extension is handed, and what is checked.
        request.setup = info.manifest.applyingDefaults(to: request.setup)
        if let problem = info.manifest.problem(with: request.setup) {
            throw ClientConnection.Refusal(code: .malformedRequest, message: problem)
        }
        // An app's own windows: the app is the host, known by its connection, never named in the request.
        if request.scope == .app && host == nil {
            throw ClientConnection.Refusal(code: .notPermitted,
                                           message: "only an app can broadcast its own windows, through the broadcast picker; the person broadcasts the screen")
        }
        let id = "bc-" + LoopbackServer.randomToken(bytes: 6)
        let session = BroadcastSession(
            id: id, request: request, host: host, hostChannel: hostChannel, manifest: info.manifest,
            parts: parts, protectedWindows: protectedWindows, logger: logger, makeFeed: makeBroadcastCapture(id: id))
        guard state.withLock({ state -> Bool in
            guard !state.stopping else { return false }
            state.broadcasts[session.id] = session
            state.latestBroadcast = session.id
            return true
        }) else { throw ClientConnection.Refusal(code: .busy, message: "replayd is shutting down") }
        // The app may have gone while the person was choosing: its own windows are then not
        // to be broadcast. (Its connection's clean-up forgets its pickers, then ends its
        // broadcasts of its own windows, so one of the two checks sees it.)
        if request.scope == .app, let hostChannel, !pickers.isOpen(host: hostChannel) {
            state.withLock { _ = $0.broadcasts.removeValue(forKey: session.id) }
            throw ClientConnection.Refusal(code: .notFound, message: "the app that asked to broadcast its own windows is gone")
        }
        captureMonitor.begin(.broadcast(session.id))
        session.onFinish { [self] status in
            indicator.ended(session.id)
            retire(session, status: status)
        }
        if let hostChannel { session.observe { status in try? hostChannel.send(DaemonEvent.broadcastUpdated(status: status)) } }
        let hidden = [store.directory.path, URL(fileURLWithPath: configuration.socketPath).deletingLastPathComponent().path]
            + configuration.privateStateDirectories.map(\.path)
        session.start(hidden: hidden, applicationInfo: host.map(Self.applicationInfo(of:)) ?? focusedApplication()) { [self] failure in
            if let failure { return started(.failure(failure)) }
            sessionStarted()
            // Announced once it is live (a start that fails was never on screen).
            indicator.began(IndicatedCapture(id: session.id, kind: .broadcast(service: info.manifest.displayName),
                                             who: host.map { IndicatedCapture.name(ofApp: $0.executable) } ?? IndicatedCapture.person),
                            stop: { session.stop() })
            started(.success(session.status))
        }
    }

    /// A finished broadcast leaves the live table, and with it its extension process,
    /// surfaces and sockets; its final status stays in a short history for `broadcast status`.
    private func retire(_ session: BroadcastSession, status: BroadcastStatus) {
        state.withLock { state in
            guard state.broadcasts.removeValue(forKey: session.id) != nil else { return }
            state.finishedBroadcasts.append(status)
            if state.finishedBroadcasts.count > Self.broadcastHistory { state.finishedBroadcasts.removeFirst() }
            state.lastActivity = parts.timers.now()
        }
        noteActivity()
        captureMonitor.end(.broadcast(session.id))
    }

    static let broadcastHistory = 16

    /// The running broadcast `id` names, or the latest one if it still runs.
    func broadcast(_ id: String?) -> BroadcastSession? {
        state.withLock { state in (id ?? state.latestBroadcast).flatMap { state.broadcasts[$0] } }
    }

    /// Running broadcasts, oldest first.
    var broadcastSessions: [BroadcastSession] {
        state.withLock { Array($0.broadcasts.values) }.sorted { $0.createdAt < $1.createdAt }
    }

    /// Finished broadcasts' final status, oldest first (at most `broadcastHistory`).
    var finishedBroadcasts: [BroadcastStatus] { state.withLock { $0.finishedBroadcasts } }

    /// Ends the running broadcasts of an app's own windows whose host connection (the app's
    /// BroadcastController) closed: the app quit or let go of it, there is nothing of it to
    /// show any more, and its pid could come to name another process.
    func endAppBroadcasts(hostChannel: ClientOutbox) {
        for session in broadcastSessions where session.request.scope == .app && !session.status.isOver
            && session.hostChannel === hostChannel {
            logger.info("the app's own broadcast ends with its connection", metadata: ["broadcast": "\(session.id)"])
            session.stop()
        }
    }

    /// Who is in focus, for `broadcastAnnotated` of the person's broadcasts: the app's
    /// executable, from the X server and the kernel; empty when nothing has focus.
    private func focusedApplication() -> [String: String] {
        guard let pid = try? windows.focusedProcess(), let executable = configuration.inspector.executable(of: pid) else { return [:] }
        return Self.applicationInfo(executable: executable)
    }

    /// An app that asked for its broadcast through the picker is the broadcast's application.
    private static func applicationInfo(of host: PeerIdentity) -> [String: String] {
        host.executable.map(applicationInfo(executable:)) ?? [:]
    }

    private static func applicationInfo(executable: String) -> [String: String] {
        ["executable": executable, "name": applicationName(executable: executable)]
    }

    /// What an app is called where the person reads it (a broadcast's annotation, the capture
    /// indicator): its executable's file name, as the kernel reports the process.
    static func applicationName(executable: String) -> String { URL(fileURLWithPath: executable).lastPathComponent }
}
