import FoundationEssentials  // not Foundation: no ICU in an app for this SDK (issue 48)
@_spi(OpenReplayKitInternal) import ReplayIPC
import ReplaySystem
import Synchronization

/// Where the SDK finds replayd: a socket path (nil: the usual places), or, for the SDK's own
/// tests, a function that hands out one connected socket per connection (a fake daemon's
/// socket pair).
enum DaemonEndpoint: Sendable {
    case socket(String?)
    case connector(@Sendable () throws -> Int32)
}

/// One connection to replayd, with a thread that reads its events. Apps never start the
/// daemon: the person (or the system's service manager) does.
final class DaemonLink: Sendable {
    let channel: MessageChannel

    private init(channel: MessageChannel) {
        self.channel = channel
    }

    /// Connects to the endpoint (a socket given, else `$OPENREPLAYKIT_SOCKET`, the person's own
    /// daemon, or the system daemon) and says hello (the protocol handshake), on a thread of
    /// its own: the calling task waits without blocking its executor, and cancelling it
    /// returns at once, with `cancelled`, hanging up the connection being made.
    static func open(_ endpoint: DaemonEndpoint) async throws(RecordingError) -> DaemonLink {
        let attempt = ConnectAttempt()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard attempt.begin(continuation) else { return }
                Threads.detach { attempt.finish(connect(endpoint, attempt: attempt)) }
            }
        } onCancel: {
            attempt.cancel()
        }
        return DaemonLink(channel: try result.get())
    }

    /// The same, blocking the caller (for `CaptureState`'s synchronous properties).
    static func openNow(_ endpoint: DaemonEndpoint) throws(RecordingError) -> DaemonLink {
        DaemonLink(channel: try connect(endpoint, attempt: ConnectAttempt()).get())
    }

    /// Connects and says hello, blocking; `attempt` learns the channel, so that a cancellation
    /// can shut it (which wakes the handshake's wait at once).
    private static func connect(_ endpoint: DaemonEndpoint, attempt: ConnectAttempt) -> Result<MessageChannel, RecordingError> {
        let candidates: [String]
        switch endpoint {
        case .connector(let connector):
            let fd: Int32
            do { fd = try connector() } catch { return .failure(RecordingError(.systemDormancy, "cannot reach replayd: \(error)")) }
            return handshake(MessageChannel(fd: fd, limits: .events), path: nil, attempt: attempt)
        case .socket(let socket?):
            candidates = [socket]
        case .socket(nil):
            let environment = ProcessInfo.processInfo.environment
            candidates = [environment["OPENREPLAYKIT_SOCKET"]].compactMap { $0 }
                + [ReplayPaths.defaultSocket().path, "/run/openreplaykit/replayd.sock"]
        }
        var lastError: SystemError?
        for path in candidates {
            let fd: Int32
            do {
                fd = try UnixSocket.connect(path: path)
            } catch {
                lastError = error
                continue
            }
            return handshake(MessageChannel(fd: fd, limits: .events), path: path, attempt: attempt)
        }
        return .failure(RecordingError(.systemDormancy,
            "replayd is not running (tried \(candidates.joined(separator: ", ")): \(lastError.map { "\($0)" } ?? "no socket"))"))
    }

    private static func handshake(_ channel: MessageChannel, path: String?, attempt: ConnectAttempt) -> Result<MessageChannel, RecordingError> {
        guard attempt.register(channel) else {
            channel.close()
            return .failure(.cancelledConnection)
        }
        do {
            if let path { try channel.requireTrustedDaemon(path: path) }
            try channel.handshake(client: "OpenReplayKit")
            return .success(channel)
        } catch {
            channel.close()
            if attempt.isCancelled { return .failure(.cancelledConnection) }
            // A daemon is there but does not welcome this app (another major protocol version,
            // too many connections): say so rather than try another one.
            return .failure(RecordingError(.systemDormancy, "replayd at \(path ?? "the given socket") cannot be used: \(error)"))
        }
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
        Threads.detach {
            while let (event, body) = (try? channel.receive(DaemonEvent.self)) ?? nil {
                handler(event, body)
            }
            handler(nil, [])
        }
    }

    func close() { channel.close() }
}

/// One connection being made on its thread, and the task waiting for it: whichever of the
/// thread's result and the task's cancellation comes first decides; a channel that comes too
/// late is closed.
private final class ConnectAttempt: Sendable {
    typealias Waiter = CheckedContinuation<Result<MessageChannel, RecordingError>, Never>

    private struct State {
        var waiter: Waiter?
        var channel: MessageChannel?
        var cancelled = false
        var finished = false
    }

    private let state = Mutex(State())

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Whether to start connecting: not when the task was cancelled already (then it is answered now).
    func begin(_ waiter: Waiter) -> Bool {
        let cancelled = state.withLock { state in
            if !state.cancelled { state.waiter = waiter }
            return state.cancelled
        }
        if cancelled { waiter.resume(returning: .failure(.cancelledConnection)) }
        return !cancelled
    }

    /// The connected channel, before its handshake; false once cancelled.
    func register(_ channel: MessageChannel) -> Bool {
        state.withLock { state in
            if !state.cancelled { state.channel = channel }
            return !state.cancelled
        }
    }

    func cancel() {
        let (waiter, channel) = state.withLock { state -> (Waiter?, MessageChannel?) in
            guard !state.finished else { return (nil, nil) }
            state.cancelled = true
            defer { state.waiter = nil }
            return (state.waiter, state.channel)
        }
        channel?.close()
        waiter?.resume(returning: .failure(.cancelledConnection))
    }

    func finish(_ result: Result<MessageChannel, RecordingError>) {
        let waiter = state.withLock { state -> Waiter? in
            state.finished = true
            state.channel = nil
            defer { state.waiter = nil }
            return state.waiter
        }
        if let waiter {
            waiter.resume(returning: result)
        } else if case .success(let channel) = result {
            channel.close()
        }
    }
}

extension RecordingError {
    static let cancelledConnection = RecordingError(.cancelled, "cancelled while connecting to replayd")
}

/// A link and the inbox its events wait in: the unit every SDK request runs on.
struct DaemonConnection: Sendable {
    let link: DaemonLink
    let inbox: EventInbox

    /// A new connection whose every event goes to its inbox.
    static func open(_ endpoint: DaemonEndpoint) async throws(RecordingError) -> DaemonConnection {
        let link = try await DaemonLink.open(endpoint)
        let inbox = EventInbox()
        link.startReading { inbox.push($0, $1) }
        return DaemonConnection(link: link, inbox: inbox)
    }

    /// Sends `request` and waits for the event `isAnswer` accepts; the daemon's refusal is
    /// thrown as a `RecordingError`, `failure` naming what was being tried. With
    /// `cancellable`, a cancelled task stops waiting at once (`cancelled`) and the caller
    /// hangs up; without, the answer is awaited (on connections shared by later requests,
    /// where a reply left unread would be taken for the next one's, and which the daemon
    /// answers at once).
    func ask(_ request: ClientRequest, failure: RecordingError.Code, cancellable: Bool = true,
             isAnswer: (DaemonEvent) -> Bool) async throws(RecordingError) {
        try link.send(request)
        while true {
            guard let event = try await inbox.next(cancellable: cancellable).event else {
                throw RecordingError(.interrupted, "replayd closed the connection")
            }
            if case .error(let code, let message) = event { throw RecordingError(daemon: code, message: message, fallback: failure) }
            if isAnswer(event) { return }
        }
    }
}
