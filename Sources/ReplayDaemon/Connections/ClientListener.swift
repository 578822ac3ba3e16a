import FoundationEssentials
import Dispatch
import Logging
import NIOCore
import ReplayCaptureModel
import ReplayIPC
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Accepts clients on replayd's socket and hands each admitted one on (to the daemon's task
/// group of connections). No thread waits to accept: the listening socket is non-blocking and
/// a dispatch source on a serial queue accepts whoever is waiting when it becomes readable
/// (admission may ask a root helper who the client is, so it stays off the event loop and
/// the cooperative pool).
final class ClientListener: Sendable {
    private let listener: Int32
    private let queue = DispatchQueue(label: "replayd.accept")
    /// What the pause after running out of descriptors waits on.
    private let timers: any Timers
    private let logger: Logger
    /// Set for a socket a service manager handed over (socket activation). That socket is
    /// shared with the manager, so stopping must not shut it down (it would refuse every
    /// later client): connections that arrive after the stop stay queued for the next
    /// replayd the manager starts.
    private let inherited: Bool
    /// Fires when clients wait. Dispatch's sources are thread-safe, but not marked Sendable.
    private nonisolated(unsafe) let source: any DispatchSourceRead
    private let state = Mutex(State())

    private struct State {
        /// Whether `serve` started the source (a source is resumed once, and cancelled once).
        var started = false
        /// Accepting pauses for a moment when the process is out of descriptors.
        var paused = false
        var stopped = false
        var complaints = RateLimit(perSecond: 1)
    }

    init(listener: Int32, inherited: Bool = false, timers: any Timers, logger: Logger) {
        self.listener = listener
        self.timers = timers
        self.inherited = inherited
        self.logger = logger
        source = DispatchSource.makeReadSource(fileDescriptor: listener, queue: queue)
    }

    deinit {
        // Dispatch traps on releasing a source that was never resumed (a daemon built, never run).
        if !state.withLock({ $0.started }) {
            source.cancel()
            source.resume()
        }
    }

    /// Accepts until `stop()`, then calls `stopped`. `admit` decides, from the socket, who the
    /// client is and whether it may stay: it returns what makes its connection, or nil after
    /// telling it why and closing the socket. Each client admitted goes to `accepted`.
    func serve(admit: @escaping @Sendable (_ fd: Int32) -> (@Sendable (any Channel) -> ClientConnection)?,
               accepted: @escaping @Sendable (AcceptedClient) -> Void,
               stopped: @escaping @Sendable () -> Void) {
        // Accepting until EAGAIN must not block; a handed-over socket may already be non-blocking.
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        source.setEventHandler { [self] in acceptWaitingClients(admit: admit, accepted: accepted) }
        source.setCancelHandler(handler: stopped)
        let start = state.withLock { state in
            defer { state.started = true }
            return !state.started && !state.stopped
        }
        if start {
            source.resume()
        } else {
            stopped()
        }
    }

    private func acceptWaitingClients(admit: @Sendable (_ fd: Int32) -> (@Sendable (any Channel) -> ClientConnection)?,
                                      accepted: @Sendable (AcceptedClient) -> Void) {
        while true {
            let fd: Int32
            do {
                fd = try UnixSocket.accept(listener)
            } catch {
                let error = error.errno
                if error == EINTR || error == ECONNABORTED { continue }
                if error == EAGAIN || error == EWOULDBLOCK { return }
                // Out of descriptors: a flood. Say so once a second at most, and give closing
                // connections a moment instead of spinning on the same error.
                if let unsaid = state.withLock({ $0.complaints.admit() }) {
                    logger.warning("cannot accept a client: \(String(cString: strerror(error)))",
                                   metadata: unsaid > 0 ? ["times since last said": "\(unsaid)"] : [:])
                }
                if error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM { pauseAccepting() }
                if error == EBADF || error == EINVAL { stop() }
                return
            }
            guard let connect = admit(fd) else { continue }
            accepted(AcceptedClient(socket: fd, connect: connect))
        }
    }

    /// Stops reading the socket for 50 ms: the clients wait in its backlog meanwhile.
    private func pauseAccepting() {
        let pause = state.withLock { state in
            defer { if !state.stopped { state.paused = true } }
            return !state.paused && !state.stopped
        }
        guard pause else { return }
        source.suspend()
        timers.after(0.05, on: queue) { [self] in resumeAccepting() }
    }

    private func resumeAccepting() {
        let resume = state.withLock { state in
            defer { state.paused = false }
            return state.paused
        }
        if resume { source.resume() }
    }

    /// Stops accepting; open connections are the daemon's to close.
    func stop() {
        let (first, started, paused) = state.withLock { state in
            defer {
                state.stopped = true
                state.paused = false
            }
            return (!state.stopped, state.started, state.paused)
        }
        guard first else { return }
        // Later clients are refused at once rather than left waiting in the backlog.
        if !inherited { Glibc.shutdown(listener, Int32(SHUT_RDWR)) }
        guard started else { return }
        source.cancel()
        // A suspended source runs its cancel handler only once resumed.
        if paused { source.resume() }
    }

    /// Tells a client it may not stay, without waiting for it, and closes its socket.
    static func refuse(_ fd: Int32, code: ErrorCode, message: String) {
        if let frame = try? FrameCodec.frameHead(DaemonEvent.error(code: code, message: message)) {
            _ = frame.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        }
        Glibc.close(fd)
    }

}
