import Logging
import ReplayCaptureModel
import ReplayIPC

/// Broadcasts: the person starts, pauses, resumes and stops them; anyone may see their
/// state, nobody but the extension ever sees their samples.
extension ClientConnection {
    func listExtensions() throws {
        try channel.send(DaemonEvent.extensions(list: daemon.catalog.list()))
    }

    func startBroadcast(_ request: BroadcastRequest) async throws {
        try requirePerson("start broadcasts directly (apps go through the broadcast picker)")
        guard (1...60).contains(request.fps) else { throw Refusal(code: .malformedRequest, message: "fps must be between 1 and 60") }
        guard request.scope == .screen else {
            throw Refusal(code: .malformedRequest, message: "the person broadcasts the screen; only an app can broadcast its own windows, through the picker")
        }
        // Answered once the extension is live (up to its readiness time): the connection's
        // later requests wait till then, and no thread does.
        let daemon = self.daemon
        let result = try await awaitAnswer { (started: @escaping @Sendable (Result<BroadcastStatus, DaemonError>) -> Void) in
            do throws(DaemonError) { try daemon.startBroadcast(request, started: started) } catch { started(.failure(error)) }
        }
        let status = try result.get()
        daemon.logger.info("broadcast requested", metadata: ["broadcast": "\(status.id)", "peer": "\(peerDescription)"])
        try channel.send(DaemonEvent.broadcastStarted(status: status))
    }

    /// Pauses or resumes a broadcast and says its state.
    func controlBroadcast(_ id: String?, _ action: (BroadcastSession) -> Void) throws {
        let session = try controllableBroadcast(id)
        action(session)
        try channel.send(DaemonEvent.broadcasts(list: [session.status]))
    }

    /// Stops a broadcast and says its final state once the extension is gone: the connection's
    /// later requests wait till then, and no thread does.
    func stopBroadcast(_ id: String?) async throws {
        let session = try controllableBroadcast(id)
        session.stop()
        let status = await session.finished()
        try channel.send(DaemonEvent.broadcasts(list: [status]))
    }

    /// The person controls any broadcast; an app only the ones it started through the picker.
    private func controllableBroadcast(_ id: String?) throws -> BroadcastSession {
        guard let session = daemon.broadcast(id), !session.status.isOver else {
            throw Refusal(code: .notFound, message: id.map { "no broadcast '\($0)' is running" } ?? "no broadcast is running")
        }
        if role == .app {
            guard let peer, session.host?.isSameProcess(as: peer) == true else {
                throw Refusal(code: .notPermitted, message: "apps can control only the broadcasts they started through the picker")
            }
        }
        return session
    }

    /// The app's way to go live: the person picks the service and its setup on a page the
    /// app never sees; the app then hears about that broadcast's state, and only that.
    /// `setup` fills in the preferred extension's fields; a secret is the person's to type.
    func showBroadcastPicker(preferredExtension: String?, microphone: Bool, scope: BroadcastScope, setup: [String: String]) async throws {
        guard let peer else { throw Refusal(code: .notPermitted, message: "the app's process could not be identified") }
        let preferred = try preferredExtension.map { id in
            guard let found = daemon.catalog.find(id) else { throw Refusal(code: .notFound, message: "no extension '\(id)' is installed") }
            return found
        }
        if !setup.isEmpty {
            guard let preferred else {
                throw Refusal(code: .malformedRequest, message: "setup for the picker needs the extension it is for (preferredExtension)")
            }
            for (key, value) in setup {
                guard let field = preferred.manifest.setupFields.first(where: { $0.key == key }) else {
                    throw Refusal(code: .malformedRequest, message: "the extension '\(preferred.manifest.id)' has no setting '\(key)'")
                }
                guard field.kind != .secret else {
                    throw Refusal(code: .notPermitted, message: "'\(key)' is a secret: the person types it into the picker, an app cannot fill it in")
                }
                guard value.count <= 1000, !value.contains(where: \.isNewline), !VisibleText.hasControlCharacters(value) else {
                    throw Refusal(code: .malformedRequest,
                                  message: "the value of '\(key)' must be one line of at most 1000 characters, without control characters")
                }
            }
        }
        let base = try await pagesBaseURL()
        let picker = daemon.pickers.open(.init(host: channel, hostPeer: peer, preferredExtension: preferredExtension,
                                                  microphone: microphone, scope: scope, suggestedSetup: setup))
        let app = peer.executable.flatMap(daemon.desktopEntries.app(executable:))
        let offer = PickerOffer(executable: peer.executable ?? "unknown app", pageURL: "\(base)/picker/\(picker.id)?token=\(picker.token)",
                                scope: scope, pickerID: picker.id, appName: app?.name, appIcon: app?.icon,
                                extensions: daemon.catalog.list().filter { preferredExtension == nil || $0.manifest.id == preferredExtension },
                                microphone: microphone, suggestedSetup: setup)
        // Answered once an agent has it: the desktop's picker may be started for it first.
        let consent = daemon.consent
        if let failure = try await awaitAnswer({ consent.offer(.pickerOffered(offer: offer), shown: $0) }) {
            throw Refusal(code: .failedToShowPreview, message: "the broadcast picker could not be shown: \(failure)")
        }
        try channel.send(DaemonEvent.pickerShown)
    }

    /// The desktop's picker starts what the person chose in it (see `BroadcastPickers.start`).
    func startPickedBroadcast(pickerID: String, extensionID: String, setup: [String: String], microphone: Bool) async throws {
        // Any of the person's tools: a picker's id goes only to consent agents.
        try requirePerson("start a broadcast from the picker")
        let daemon = self.daemon
        switch await daemon.startPicked(pickerID, extensionID: extensionID, setup: setup, microphone: microphone) {
        case .success(let status): try channel.send(DaemonEvent.broadcastStarted(status: status))
        case .failure(let error): throw error
        }
    }

    /// The desktop's picker stops the broadcast it started, and no other.
    func stopPickedBroadcast(pickerID: String) async throws {
        try requirePerson("stop a broadcast from the picker")
        guard let final = await daemon.stopPicked(pickerID) else {
            throw Refusal(code: .notFound, message: "picker '\(pickerID)' has no broadcast running")
        }
        try channel.send(DaemonEvent.broadcastUpdated(status: final))
    }

    /// Every broadcast's state. A broadcast's URL (a viewer page with its token, say) is the
    /// person's and its host app's only: other apps see that it runs, not where to watch it.
    func sendBroadcastStatus() throws {
        let finished = daemon.finishedBroadcasts.map { status in
            var status = status
            // Its host is no longer known once it is over: only the person sees where it was watched.
            if role != .person { status.broadcastURL = nil }
            return status
        }
        let statuses = finished + daemon.broadcastSessions.map { session in
            var status = session.status
            if role != .person && !(peer.map { session.host?.isSameProcess(as: $0) == true } ?? false) { status.broadcastURL = nil }
            return status
        }
        try channel.send(DaemonEvent.broadcasts(list: statuses))
    }
}
