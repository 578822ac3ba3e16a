import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Logging
import ReplayCaptureModel
import ReplayDesktop
import ReplayIPC
import ReplaySystem
import Synchronization

/// Serves one client: its requests are read and handled one at a time, in order, by the
/// connection's own task (`serve`), which the daemon's task group runs. A request that waits
/// for something (consent, a broadcast's start, a session's end) awaits it: the connection's
/// later requests wait their turn, and no thread does. A malformed or out-of-order request is
/// answered with an error and the connection is closed; the daemon carries on.
///
/// Who the client is comes from the kernel: the person's own tools (the replay CLI run by
/// the store's owner) may read the store and answer consent; every other client is an app,
/// which must get consent to capture and only ever sees opaque recording ids.
final class ClientConnection: @unchecked Sendable {
    // @unchecked: the mutable state below is touched only by the task that runs `serve`.
    enum Role {
        case person
        case app
    }

    /// A request refused; `closing` ends the connection after the error is sent.
    typealias Refusal = DaemonError

    let daemon: Daemon
    let channel: ClientOutbox
    /// Unique per connection: the owner of the windows it protects.
    let number: Int
    let peer: PeerIdentity?
    let role: Role
    /// Why a client that looks like the person's replay is treated as an app; said in refusals.
    let whyNotPerson: String?
    var recording: (any RecordingControl)?
    /// An app's clip buffer, which ends with its connection (the person's lives in the daemon).
    var clipBuffer: (any RecordingControl)?
    var capture: (any AppCaptureControl)?
    var agentID: Int?
    /// Previews this agent watches, by question (`watchConsentPreview`); each ends with its question.
    var consentPreviews: [String: any AppCaptureControl] = [:]
    var watcherID: Int?
    private var isOver = false
    /// Its questions to the person are withdrawn when it hangs up (`awaitConsent`).
    private var withdrawsOnClose = false
    /// Nothing but a hello of this protocol's version passes until the client has said one.
    private var handshake = ClientProtocol.Gate()

    init(daemon: Daemon, channel: ClientOutbox, number: Int, peer: PeerIdentity?, role: Role, whyNotPerson: String? = nil) {
        self.daemon = daemon
        self.channel = channel
        self.number = number
        self.peer = peer
        self.role = role
        self.whyNotPerson = whyNotPerson
    }

    var peerDescription: String { peer?.description ?? "unknown peer" }

    /// Who captures, as the indicator names it: the person's `replay` command, or the app as
    /// the desktop names it (its `.desktop` entry), else its executable's file name.
    var capturerName: String {
        guard role != .person else { return IndicatedCapture.person }
        return peer?.executable.flatMap { daemon.desktopEntries.app(executable: $0)?.name } ?? IndicatedCapture.name(ofApp: peer?.executable)
    }

    /// Whose allowance this connection's captures take (`CaptureQuota`).
    var quotaOwner: CaptureQuota.Owner {
        guard role == .app else { return .person }
        return .app(uid: peer?.uid ?? .max, executable: peer?.executable ?? "pid \(peer?.pid ?? -1)")
    }

    /// Handles the client's framed requests in order until it hangs up (or shuts down its
    /// sending side: what it asked is answered first), is cut off, or the task is cancelled
    /// (replayd stopping); then ends what it started and gives back its place. Bytes that are
    /// not a frame (too long, truncated) end the sequence with an error: said, and closed.
    func serve<Requests: AsyncSequence<[UInt8], any Error>>(_ requests: Requests) async {
        do {
            for try await json in requests {
                await serve(json)
                if isOver { break }
            }
        } catch is CancellationError {
            // replayd is stopping: what the client started ends below, as when it hangs up.
        } catch {
            refuse(Refusal(code: .malformedRequest, message: "\(error)", closing: true), warning: "rejected a malformed request: \(error)")
        }
        await cleanUp()
    }

    private func serve(_ json: [UInt8]) async {
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
            try await handle(request)
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

    private func handle(_ request: ClientRequest) async throws {
        switch request {
        case .hello: break  // answered by `handshake` in serve()
        case .startRecording(let options): try await startRecording(options)
        case .stopRecording: try stopRecording()
        case .pauseRecording(let id): try await controlRecording(id, pause: true)
        case .resumeRecording(let id): try await controlRecording(id, pause: false)
        case .listRecordings: try listRecordings()
        case .exportRecording(let id, let container, let from, let to):
            try await export(id: id, container: container ?? .mp4, from: from, to: to)
        case .deleteRecording(let id): try delete(id: id)
        case .previewURL(let id): try await previewURL(id: id)
        case .discardRecording(let id): try discard(id: id)
        case .showPreview(let id): try await showPreview(id: id)
        case .status: try await sendStatus()
        case .registerConsentAgent: try registerAgent()
        case .answerConsent(let requestID, let allow): try answerConsent(requestID: requestID, allow: allow)
        case .watchConsentPreview(let requestID): try watchConsentPreview(requestID: requestID)
        case .startCapture(let options): try await startCapture(options)
        case .stopCapture: try await stopCapture()
        case .watchCaptureState: try watchCaptureState()
        case .protectWindow(let id): try protectWindow(id)
        case .unprotectWindow(let id): try unprotectWindow(id)
        case .listExtensions: try listExtensions()
        case .startBroadcast(let request): try await startBroadcast(request)
        case .pauseBroadcast(let id): try controlBroadcast(id) { $0.pause() }
        case .resumeBroadcast(let id): try controlBroadcast(id) { $0.resume() }
        case .stopBroadcast(let id): try await stopBroadcast(id)
        case .broadcastStatus: try sendBroadcastStatus()
        case .showBroadcastPicker(let preferred, let microphone, let scope, let setup):
            try await showBroadcastPicker(preferredExtension: preferred, microphone: microphone, scope: scope ?? .screen, setup: setup ?? [:])
        case .startPickedBroadcast(let pickerID, let extensionID, let setup, let microphone):
            try await startPickedBroadcast(pickerID: pickerID, extensionID: extensionID, setup: setup, microphone: microphone)
        case .stopPickedBroadcast(let pickerID): try await stopPickedBroadcast(pickerID: pickerID)
        case .forgetScreenChoice:
            try requirePerson("forget the screen the person chose")
            daemon.forgetScreenChoice()
            try channel.send(DaemonEvent.screenChoiceForgotten)
        case .startClipBuffering(let options, let length, let byteBudget, let hotkey):
            try await startClipBuffering(options, length: length, byteBudget: byteBudget, hotkey: hotkey)
        case .saveClip(let last): try await saveClip(last: last)
        case .clipStatus: try sendClipStatus()
        case .stopClipBuffering: try await stopClipBuffering()
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
    func pagesBaseURL() async throws -> String {
        let base: String?
        do { base = try await daemon.pagesBaseURL() } catch {
            throw Refusal(code: .failedToShowPreview, message: "replayd cannot start its loopback pages: \(error)")
        }
        guard let base else {
            throw Refusal(code: .failedToShowPreview, message: "replayd serves no pages (started with --no-pages)")
        }
        return base
    }

    /// Starts a session by `begin` and awaits its start: through the portal the person may be
    /// choosing a screen meanwhile, and the connection's later requests wait their turn. A
    /// session that could not start gives back its place (`release`), and its error is thrown.
    /// If the client is gone by then, or replayd stops first, `abandon` ends what started.
    func awaitStart<Value: Sendable>(_ begin: (@escaping @Sendable (Result<Value, DaemonError>) -> Void) -> Void,
                                     release: @escaping @Sendable () -> Void,
                                     abandon: @escaping @Sendable () -> Void) async throws -> Value {
        let result = try await awaitAnswer(begin, late: { result in
            if case .success = result { abandon() } else { release() }
        })
        switch result {
        case .success(let value):
            guard !channel.isClosed else {
                abandon()
                throw Refusal(code: .internalError, message: "the client's connection is closed")
            }
            daemon.sessionStarted()
            return value
        case .failure(let error):
            release()
            throw error
        }
    }

    /// Returns once the client may capture `capabilities`: at once for the person; for an app
    /// once the broker has decided, which may mean awaiting the person's answer.
    func awaitConsent(_ capabilities: ConsentBroker.Capabilities) async throws {
        guard role == .app else { return }
        guard let peer else { throw Refusal(code: .userDeclined, message: "the app's process could not be identified") }
        let daemon = self.daemon, channel = self.channel, number = self.number
        // A question carries its consent page's link: the pages start first (once), and a
        // daemon that cannot serve them still asks.
        _ = try? await daemon.pagesBaseURL()
        // An app that hangs up while the person is asked: the question goes, with its dialog.
        if !withdrawsOnClose {
            withdrawsOnClose = true
            channel.whenClosed { daemon.consent.withdraw(asker: number) }
        }
        let decision = try await awaitAnswer { (decided: @escaping @Sendable (ConsentBroker.Decision) -> Void) in
            // An answer counts once `authorize` has returned, and so said "waiting".
            let asked = Completion<Void>()
            let now = daemon.consent.authorize(peer, capabilities: capabilities, asker: number, waiting: {
                try? channel.send(DaemonEvent.waitingForConsent)
            }, decided: { decision in
                asked.onComplete { decided(decision) }
            })
            asked.complete(())
            if let now { decided(now) }
        }
        try consented(decision)
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

    private func sendStatus() async throws {
        // The person's status names the pages, starting them.
        let pagesURL = role == .person ? (try? await daemon.pagesBaseURL()).flatMap { $0 } : nil
        try channel.send(DaemonEvent.status(status: DaemonStatus(
            pid: getpid(), display: daemon.configuration.displayName ?? ProcessInfo.processInfo.environment["DISPLAY"],
            activeRecordings: role == .person ? daemon.activeRecordings : [], mode: daemon.configuration.mode,
            store: role == .person ? daemon.store.directory.path : nil,
            pagesURL: pagesURL,
            capture: role == .person ? daemon.captureInfo : nil,
            pausedRecordings: role == .person ? daemon.pausedRecordings : nil,
            indicator: role == .person ? indicatorReach : nil)))
    }

    /// The indicator as this client's minor version knows it: the tray (2.4) is shown as a
    /// notification to earlier clients (docs/protocol.md, "Growth", rule 5).
    private var indicatorReach: IndicatorStatus {
        var reach = daemon.indicator.reach
        if reach.kind == .tray && handshake.clientMinorVersion < 4 { reach.kind = .notifications }
        return reach
    }

    /// The client is gone (or replayd stops): what it started ends, a movie kept, and once
    /// those have ended what it held is given back.
    private func cleanUp() async {
        isOver = true
        recording?.stop()
        capture?.stop()
        clipBuffer?.stop()
        if let recording { _ = await recording.finished() }
        if let capture { await capture.finished() }
        if let clipBuffer { _ = await clipBuffer.finished() }
        for preview in consentPreviews.values {
            preview.stop()
            await preview.finished()
        }
        releaseEverything()
        // Its last words (an error that closed it) reach the client before the socket closes.
        await channel.written()
    }

    /// What the client held besides its captures, once those have ended.
    private func releaseEverything() {
        if let agentID { daemon.consent.removeAgent(agentID) }
        if let watcherID { daemon.captureMonitor.unwatch(watcherID) }
        daemon.protectedWindows.release(owner: number)
        for pickerID in daemon.pickers.close(host: channel) { daemon.consent.notifyAgents(.pickerClosed(pickerID: pickerID)) }
        daemon.endAppBroadcasts(hostChannel: channel)
        channel.close()
        daemon.connectionClosed(self)
    }
}
