import Foundation
import Logging
import ReplayCaptureModel
import ReplayDesktop
import ReplayIPC
import ReplaySystem
import Synchronization

/// Serves one client: its requests are handled one at a time, in order, on `queue`, its
/// serial executor (no thread while it is idle). A request that waits for something (consent,
/// a broadcast's start, a session's end) suspends the queue instead of a thread
/// (`holdRequests`). A malformed or out-of-order request is answered with an error and the
/// connection is closed; the daemon carries on.
///
/// Who the client is comes from the kernel: the person's own tools (the replay CLI run by
/// the store's owner) may read the store and answer consent; every other client is an app,
/// which must get consent to capture and only ever sees opaque recording ids.
final class ClientConnection: @unchecked Sendable {
    // @unchecked: the mutable state below is touched only on `queue`, or while it is
    // suspended for a request that waits (`holdRequests`).
    enum Role {
        case person
        case app
    }

    /// A request refused; `closing` ends the connection after the error is sent.
    typealias Refusal = DaemonError

    /// Requests waiting on `queue` past which a client is cut off: it floods.
    static let maxQueuedRequests = 64

    let daemon: Daemon
    let channel: ClientOutbox
    /// Unique per connection: the owner of the windows it protects.
    let number: Int
    let peer: PeerIdentity?
    let role: Role
    /// Why a client that looks like the person's replay is treated as an app; said in refusals.
    let whyNotPerson: String?
    let queue: DispatchQueue
    private let queuedRequests = Atomic<Int>(0)
    var recording: (any RecordingControl)?
    /// An app's clip buffer, which ends with its connection (the person's lives in the daemon).
    var clipBuffer: (any RecordingControl)?
    var capture: (any AppCaptureControl)?
    var agentID: Int?
    var watcherID: Int?
    private var isOver = false
    /// Nothing but a hello of this protocol's version passes until the client has said one.
    private var handshake = ClientProtocol.Gate()
    private var cleanedUp = false

    init(daemon: Daemon, channel: ClientOutbox, number: Int, peer: PeerIdentity?, role: Role, whyNotPerson: String? = nil) {
        self.daemon = daemon
        self.channel = channel
        self.number = number
        self.peer = peer
        self.role = role
        self.whyNotPerson = whyNotPerson
        queue = DispatchQueue(label: "replayd.client.\(number)")
    }

    var peerDescription: String { peer?.description ?? "unknown peer" }

    /// Who captures, as the indicator names it: the person's `replay` command, or the app's
    /// executable name (an app cannot choose how it is named).
    var capturerName: String {
        role == .person ? IndicatedCapture.person : IndicatedCapture.name(ofApp: peer?.executable)
    }

    /// Whose allowance this connection's captures take (`CaptureQuota`).
    var quotaOwner: CaptureQuota.Owner {
        guard role == .app else { return .person }
        return .app(uid: peer?.uid ?? .max, executable: peer?.executable ?? "pid \(peer?.pid ?? -1)")
    }

    /// A framed request arrived (on the event loop): it is handled in turn on `queue`.
    func received(_ json: [UInt8]) {
        guard queuedRequests.add(1, ordering: .relaxed).newValue <= Self.maxQueuedRequests else {
            queue.async { [self] in
                refuse(Refusal(code: .busy, message: "too many requests at once (\(Self.maxQueuedRequests)); the connection was closed",
                               closing: true))
            }
            return
        }
        queue.async { [self] in
            queuedRequests.subtract(1, ordering: .relaxed)
            serve(json)
        }
    }

    /// Bytes that are not a frame (too long, truncated): said, and the connection closed.
    func receivedMalformed(_ error: any Error) {
        queue.async { [self] in
            refuse(Refusal(code: .malformedRequest, message: "\(error)", closing: true), warning: "rejected a malformed request: \(error)")
        }
    }

    /// The client hung up (or was cut off): what it started ends.
    func disconnected() {
        queue.async { [self] in cleanUp() }
    }

    private func serve(_ json: [UInt8]) {
        guard !isOver else { return }
        let decoded: ClientProtocol.Decoded<ClientRequest>
        do {
            decoded = try ClientProtocol.decode(ClientRequest.self, from: json)
        } catch {
            refuse(Refusal(code: .malformedRequest, message: error.description, closing: true), warning: "rejected a malformed request: \(error)")
            return
        }
        // A request of a later minor version (docs/protocol.md, "Growth"): the gate says how to answer.
        let verdict: ClientProtocol.Gate.Verdict
        switch decoded {
        case .message(let request): verdict = handshake.admit(request, daemonPID: getpid())
        case .unknown(let name): verdict = handshake.admitUnknown(name: name)
        }
        switch verdict {
        case .handle: break
        case .answer(let welcome):
            daemon.logger.debug("client said hello", metadata: ["peer": "\(peerDescription)", "client": "\(handshake.client ?? "?")",
                                                               "minor": "\(handshake.clientMinorVersion)"])
            try? channel.send(welcome)
            return
        case .refuse(let code, let message): refuse(Refusal(code: code, message: message, closing: true)); return
        case .reject(let code, let message): refuse(Refusal(code: code, message: message)); return
        }
        guard case .message(let request) = decoded else { return }  // an unknown request never gets .handle
        do {
            try handle(request)
        } catch {
            answer(error)
        }
    }

    /// A request that failed: a refusal is said as it is, anything else as an internal error.
    private func answer(_ error: any Error) {
        if let refusal = error as? Refusal {
            refuse(refusal)
        } else {
            daemon.logger.warning("request failed: \(error)")
            try? channel.send(DaemonEvent.error(code: .internalError, message: "\(error)"))
        }
    }

    /// Answers with the refusal; one that closes the connection is logged (`warning`, or its
    /// message), a few a second at most across all connections.
    private func refuse(_ refusal: Refusal, warning: String? = nil) {
        try? channel.send(DaemonEvent.error(code: refusal.code, message: refusal.message))
        if refusal.closing {
            daemon.logRateLimited(warning.map { "\($0); the connection was closed" } ?? "closed a connection after: \(refusal.message)",
                                  peer: peer, .refusal)
            isOver = true
            channel.close()
        }
    }

    private func handle(_ request: ClientRequest) throws {
        switch request {
        case .hello: break  // answered by `handshake` in serve()
        case .startRecording(let options): try startRecording(options)
        case .stopRecording: try stopRecording()
        case .pauseRecording(let id): try controlRecording(id, pause: true)
        case .resumeRecording(let id): try controlRecording(id, pause: false)
        case .listRecordings: try listRecordings()
        case .exportRecording(let id, let container): try export(id: id, container: container ?? .mp4)
        case .deleteRecording(let id): try delete(id: id)
        case .previewURL(let id): try previewURL(id: id)
        case .discardRecording(let id): try discard(id: id)
        case .showPreview(let id): try showPreview(id: id)
        case .status: try sendStatus()
        case .registerConsentAgent: try registerAgent()
        case .answerConsent(let requestID, let allow): try answerConsent(requestID: requestID, allow: allow)
        case .startCapture(let options): try startCapture(options)
        case .stopCapture: try stopCapture()
        case .watchCaptureState: try watchCaptureState()
        case .protectWindow(let id): try protectWindow(id)
        case .unprotectWindow(let id): try unprotectWindow(id)
        case .listExtensions: try listExtensions()
        case .startBroadcast(let request): try startBroadcast(request)
        case .pauseBroadcast(let id): try controlBroadcast(id) { $0.pause() }
        case .resumeBroadcast(let id): try controlBroadcast(id) { $0.resume() }
        case .stopBroadcast(let id): try stopBroadcast(id)
        case .broadcastStatus: try sendBroadcastStatus()
        case .showBroadcastPicker(let preferred, let microphone, let scope, let setup):
            try showBroadcastPicker(preferredExtension: preferred, microphone: microphone, scope: scope ?? .screen, setup: setup ?? [:])
        case .forgetScreenChoice:
            try requirePerson("forget the screen the person chose")
            daemon.forgetScreenChoice()
            try channel.send(DaemonEvent.screenChoiceForgotten)
        case .startClipBuffering(let options, let length, let byteBudget, let hotkey):
            try startClipBuffering(options, length: length, byteBudget: byteBudget, hotkey: hotkey)
        case .saveClip(let last): try saveClip(last: last)
        case .clipStatus: try sendClipStatus()
        case .stopClipBuffering: try stopClipBuffering()
        case .listSources:
            try requirePerson("list the screen's windows and the audio devices")
            try channel.send(DaemonEvent.sources(sources: CaptureSources(daemon.parts.desktop.listSources())))
        }
    }

    /// Throws unless the client is the person's own tool.
    func requirePerson(_ what: String) throws {
        guard role == .person else {
            let why = whyNotPerson.map { "; this replay is not trusted as the person's: \($0)" } ?? ""
            throw Refusal(code: .notPermitted, message: "apps cannot \(what): only the person's own replay command can\(why)")
        }
    }

    /// Where the loopback pages are, or a refusal when replayd serves none.
    func pagesBaseURL() throws -> String {
        let base: String?
        do { base = try daemon.pagesBaseURL() } catch {
            throw Refusal(code: .failedToShowPreview, message: "replayd cannot start its loopback pages: \(error)")
        }
        guard let base else {
            throw Refusal(code: .failedToShowPreview, message: "replayd serves no pages (started with --no-pages)")
        }
        return base
    }

    /// Holds this connection's later requests until the returned function is called with
    /// what is left of this one: a request that waits for something (the person's consent, a
    /// broadcast's end) holds no thread meanwhile. What is left runs on a global queue, alone
    /// with the connection's state as on `queue`, its errors answered as a request's are; then
    /// the requests held run on. Only the first call counts. A connection closed meanwhile
    /// runs `ifOver` instead of the rest.
    func holdRequests(ifOver: (@Sendable () -> Void)? = nil) -> @Sendable (_ rest: @escaping @Sendable () throws -> Void) -> Void {
        queue.suspend()
        let resumed = Atomic(false)
        return { [self] rest in
            guard !resumed.exchange(true, ordering: .relaxed) else { return }
            DispatchQueue.global().async { [self] in
                defer { queue.resume() }
                guard !isOver else { ifOver?(); return }
                do { try rest() } catch { answer(error) }
            }
        }
    }

    /// Starts a session by `begin` and holds this connection's later requests until it has
    /// started or failed: through the portal the person may be choosing a screen meanwhile, and
    /// no thread waits for it. `started` runs then, as the rest of the request; a session that
    /// could not start gives back its place (`release`) and its error is answered. If the client
    /// was cut off meanwhile, `abandon` ends what started, and nobody hears of it.
    func holdUntilStarted<Value: Sendable>(_ begin: (@escaping @Sendable (Result<Value, DaemonError>) -> Void) -> Void,
                                           release: @escaping @Sendable () -> Void, abandon: @escaping @Sendable () -> Void,
                                           then started: @escaping @Sendable (Value) throws -> Void) {
        let daemon = self.daemon
        let resume = holdRequests(ifOver: abandon)
        begin { result in
            resume {
                switch result {
                case .success(let value):
                    defer { daemon.sessionStarted() }
                    try started(value)
                case .failure(let error):
                    release()
                    throw error
                }
            }
        }
    }

    /// Runs `body` once the client may capture `capabilities`: at once for the person; for an
    /// app once the broker has decided, which may mean the person's answer (`holdRequests`).
    func withConsent(_ capabilities: ConsentBroker.Capabilities, then body: @escaping @Sendable () throws -> Void) throws {
        guard role == .app else { return try body() }
        guard let peer else { throw Refusal(code: .userDeclined, message: "the app's process could not be identified") }
        // Held before asking, so an answer that comes at once finds the requests held.
        let resume = holdRequests()
        let proceed: @Sendable (ConsentBroker.Decision) -> Void = { [self] decision in
            resume { [self] in
                try consented(decision)
                try body()
            }
        }
        // An answer's work starts once `authorize` has returned, and so said "waiting".
        let asked = DispatchGroup()
        asked.enter()
        let decision = daemon.consent.authorize(peer, capabilities: capabilities, waiting: {
            try? channel.send(DaemonEvent.waitingForConsent)
        }, decided: { decision in
            asked.notify(queue: .global()) { proceed(decision) }
        })
        asked.leave()
        if let decision { proceed(decision) }
    }

    /// Throws `userDeclined` (or `quotaExceeded`) unless the broker allowed the capture.
    private func consented(_ decision: ConsentBroker.Decision) throws {
        if case .tooManyPending(let why) = decision {
            daemon.logRateLimited("consent not asked: \(why)", peer: peer, .refusal)
            throw Refusal(code: .quotaExceeded, message: why)
        }
        if case .declined(let why) = decision {
            daemon.logger.info("capture declined", metadata: ["peer": "\(peerDescription)", "why": "\(why)"])
            throw Refusal(code: .userDeclined, message: "the person did not allow this app to capture: \(why)")
        }
        daemon.logger.info("capture allowed", metadata: ["peer": "\(peerDescription)"])
        daemon.updateProbes()  // an app holds consent: its focus is watched
    }

    private func sendStatus() throws {
        try channel.send(DaemonEvent.status(status: DaemonStatus(
            pid: getpid(), display: daemon.configuration.displayName ?? ProcessInfo.processInfo.environment["DISPLAY"],
            activeRecordings: role == .person ? daemon.activeRecordings : [], mode: daemon.configuration.mode,
            store: role == .person ? daemon.store.directory.path : nil,
            pagesURL: role == .person ? (try? daemon.pagesBaseURL()).flatMap { $0 } : nil,
            capture: role == .person ? daemon.captureInfo : nil,
            pausedRecordings: role == .person ? daemon.pausedRecordings : nil,
            indicator: role == .person ? daemon.indicator.reach : nil)))
    }

    private func cleanUp() {
        // Once: a half-close and the close that follows both say the client is gone.
        guard !cleanedUp else { return }
        cleanedUp = true
        isOver = true
        // A client that goes away mid-capture ends what it started (a movie is kept); the rest
        // of the clean-up waits for their ends with the queue suspended, holding no thread.
        let ended = DispatchGroup()
        if let recording {
            recording.stop()
            ended.enter()
            recording.onFinish { _ in ended.leave() }
        }
        if let capture {
            capture.stop()
            ended.enter()
            capture.onFinish { ended.leave() }
        }
        if let clipBuffer {
            clipBuffer.stop()
            ended.enter()
            clipBuffer.onFinish { _ in ended.leave() }
        }
        queue.suspend()
        ended.notify(queue: .global()) { [self] in
            releaseEverything()
            queue.resume()
        }
    }

    /// What the client held besides its captures, once those have ended.
    private func releaseEverything() {
        if let agentID { daemon.consent.removeAgent(agentID) }
        if let watcherID { daemon.captureMonitor.unwatch(watcherID) }
        daemon.protectedWindows.release(owner: number)
        daemon.pickers.close(host: channel)
        daemon.endAppBroadcasts(hostChannel: channel)
        channel.close()
        daemon.connectionClosed(self)
    }
}
