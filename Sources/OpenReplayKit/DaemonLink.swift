import Foundation
import ReplayIPC
import ReplaySystem

/// One connection to replayd, with a thread that reads its events. Apps never start the
/// daemon: the person (or the system's service manager) does.
final class DaemonLink: Sendable {
    let channel: MessageChannel

    /// Connects to `socket`, else `$OPENREPLAYKIT_SOCKET`, the person's own daemon, or the system
    /// daemon, and says hello (the protocol handshake).
    init(socket: String?) throws(RecordingError) {
        let environment = ProcessInfo.processInfo.environment
        let candidates = socket.map { [$0] } ?? ([environment["OPENREPLAYKIT_SOCKET"]].compactMap { $0 }
            + [ReplayPaths.defaultSocket().path, "/run/openreplaykit/replayd.sock"])
        var lastError: SystemError?
        for path in candidates {
            do {
                channel = try MessageChannel.connect(path: path, client: "OpenReplayKit")
                return
            } catch let error as SystemError {
                lastError = error
            } catch {
                // A daemon is there but does not welcome this app (another protocol version,
                // too many connections): say so rather than try another one.
                throw RecordingError(.systemDormancy, "replayd at \(path) cannot be used: \(error)")
            }
        }
        throw RecordingError(.systemDormancy,
            "replayd is not running (tried \(candidates.joined(separator: ", ")): \(lastError.map { "\($0)" } ?? "no socket"))")
    }

    func send(_ request: ClientRequest) throws(RecordingError) {
        do {
            try channel.send(request)
        } catch {
            throw RecordingError(.interrupted, "lost the connection to replayd: \(error)")
        }
    }

    /// Calls `handler` with each event on a thread of its own, then once with nil when the
    /// connection ends.
    func startReading(_ handler: @escaping @Sendable (_ event: DaemonEvent?, _ body: [UInt8]) -> Void) {
        let channel = self.channel
        Thread.detachNewThread {
            while let (event, body) = (try? channel.receive(DaemonEvent.self)) ?? nil {
                handler(event, body)
            }
            handler(nil, [])
        }
    }

    func close() { channel.close() }
}

/// A link and the inbox its events wait in: the unit every SDK request runs on.
struct DaemonConnection: Sendable {
    let link: DaemonLink
    let inbox: EventInbox

    /// A new connection whose every event goes to its inbox.
    static func open(socket: String?) throws(RecordingError) -> DaemonConnection {
        let link = try DaemonLink(socket: socket)
        let inbox = EventInbox()
        link.startReading { inbox.push($0, $1) }
        return DaemonConnection(link: link, inbox: inbox)
    }

    /// Sends `request` and waits for the event `isAnswer` accepts; the daemon's refusal is
    /// thrown as a `RecordingError`, `failure` naming what was being tried.
    func ask(_ request: ClientRequest, failure: RecordingError.Code, isAnswer: (DaemonEvent) -> Bool) async throws(RecordingError) {
        try link.send(request)
        while true {
            guard let event = await inbox.next().event else { throw RecordingError(.interrupted, "replayd closed the connection") }
            if case .error(let code, let message) = event { throw RecordingError(daemon: code, message: message, fallback: failure) }
            if isAnswer(event) { return }
        }
    }
}
