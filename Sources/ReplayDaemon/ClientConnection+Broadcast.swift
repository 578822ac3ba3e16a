import Logging
import ReplayIPC

/// Broadcasts: the person starts, pauses, resumes and stops them; anyone may see their
/// state, nobody but the extension ever sees their samples.
extension ClientConnection {
    func listExtensions() throws {
        try channel.send(DaemonEvent.extensions(daemon.catalog.list()))
    }

    func startBroadcast(_ request: BroadcastRequest) throws {
        try requirePerson("start broadcasts directly (apps go through the broadcast picker)")
        guard (1...60).contains(request.fps) else { throw Refusal(code: .malformedRequest, message: "fps must be between 1 and 60") }
        let status = try daemon.startBroadcast(request)
        daemon.logger.info("broadcast requested", metadata: ["broadcast": "\(status.id)", "peer": "\(peerDescription)"])
        try channel.send(DaemonEvent.broadcastStarted(status))
    }

    func controlBroadcast(_ id: String?, _ action: (BroadcastSession) -> Void) throws {
        try requirePerson("control broadcasts")
        guard let session = daemon.broadcast(id), !session.status.isOver else {
            throw Refusal(code: .notFound, message: id.map { "no broadcast '\($0)' is running" } ?? "no broadcast is running")
        }
        action(session)
        try channel.send(DaemonEvent.broadcasts([session.status]))
    }

    func sendBroadcastStatus() throws {
        try channel.send(DaemonEvent.broadcasts(daemon.broadcastStatuses))
    }
}
