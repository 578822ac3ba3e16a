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
/// a `ReadableWatch` (replayd's own epoll, as every descriptor it waits on) accepts whoever is
/// waiting when it becomes readable, on the watch's serial queue (admission may ask a root
/// helper who the client is, so it stays off the event loops).
final class ClientListener: Sendable {
    private let listener: Int32
    /// What the pause after running out of descriptors waits on.
    private let timers: any Timers
    private let logger: Logger
    /// Set for a socket a service manager handed over (socket activation). That socket is
    /// shared with the manager, so stopping must not shut it down (it would refuse every
    /// later client): connections that arrive after the stop stay queued for the next
    /// replayd the manager starts.
    private let inherited: Bool
    private let state = Mutex(State())

    private typealias Admit = @Sendable (_ fd: Int32) -> (@Sendable (any Channel) -> ClientConnection)?

    private struct State {
        /// What `serve` was given: set once it has run.
        var served: (admit: Admit, accepted: @Sendable (AcceptedClient) -> Void, stopped: @Sendable () -> Void)?
        /// The watch on the socket, from its start until its cancel handler has run. None while
        /// accepting pauses for a moment after running out of descriptors.
        var watch: ReadableWatch?
        var stopped = false
        var complaints = RateLimit(perSecond: 1)
    }

    init(listener: Int32, inherited: Bool = false, timers: any Timers, logger: Logger) {
        self.listener = listener
        self.timers = timers
        self.inherited = inherited
        self.logger = logger
    }

    /// Accepts until `stop()`, then calls `stopped`. `admit` decides, from the socket, who the
    /// client is and whether it may stay: it returns what makes its connection, or nil after
    /// telling it why and closing the socket. Each client admitted goes to `accepted`.
    func serve(admit: @escaping @Sendable (_ fd: Int32) -> (@Sendable (any Channel) -> ClientConnection)?,
               accepted: @escaping @Sendable (AcceptedClient) -> Void,
               stopped: @escaping @Sendable () -> Void) {
        // Accepting until EAGAIN must not block; a handed-over socket may already be non-blocking.
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        let start = state.withLock { state in
            guard state.served == nil else { return false }
            state.served = (admit, accepted, stopped)
            return !state.stopped
        }
        if start { watch() } else { stopped() }
    }

    /// Watches the socket, unless stopped meanwhile (then `stop` has said so).
    private func watch() {
        state.withLock { state in
            guard !state.stopped, state.watch == nil, let served = state.served else { return }
            state.watch = ReadableWatch(descriptor: listener, label: "replayd.accept", whenCancelled: { [self] in
                watchEnded()
            }, whenReadable: { [self] watch in
                acceptWaitingClients(admit: served.admit, accepted: served.accepted, watch: watch)
            })
        }
    }

    /// The watch has let go of the socket: stopping is over, or accepting resumes after its pause.
    private func watchEnded() {
        let stopped = state.withLock { state in
            state.watch = nil
            return state.stopped ? state.served?.stopped : nil
        }
        if let stopped { return stopped() }
        timers.after(0.05) { [self] in watch() }
    }

    private func acceptWaitingClients(admit: Admit, accepted: @Sendable (AcceptedClient) -> Void, watch: ReadableWatch) {
        while true {
            let fd: Int32
            do {
                fd = try UnixSocket.accept(listener)
            } catch {
                let error = error.errno
                if error == EINTR || error == ECONNABORTED { continue }
                if error == EAGAIN || error == EWOULDBLOCK { return }
                // Out of descriptors: a flood. Say so once a second at most, and give closing
                // connections a moment instead of spinning on the same error: the watch ends,
                // and another starts 50 ms later (`watchEnded`); clients wait in the backlog.
                if let unsaid = state.withLock({ $0.complaints.admit() }) {
                    logger.warning("cannot accept a client: \(String(cString: strerror(error)))",
                                   metadata: unsaid > 0 ? ["times since last said": "\(unsaid)"] : [:])
                }
                if error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM { watch.cancel() }
                if error == EBADF || error == EINVAL { stop() }
                return
            }
            guard let connect = admit(fd) else { continue }
            accepted(AcceptedClient(socket: fd, connect: connect))
        }
    }

    /// Stops accepting; open connections are the daemon's to close.
    func stop() {
        let (first, watch, stopped) = state.withLock { state in
            defer { state.stopped = true }
            // Without a watch (paused, or never served) nothing else will say it stopped.
            return (!state.stopped, state.watch, state.watch == nil ? state.served?.stopped : nil)
        }
        guard first else { return }
        // Later clients are refused at once rather than left waiting in the backlog.
        if !inherited { Glibc.shutdown(listener, Int32(SHUT_RDWR)) }
        watch?.cancel()
        stopped?()
    }

    /// Tells a client it may not stay, without waiting for it, and closes its socket.
    static func refuse(_ fd: Int32, code: ErrorCode, message: String) {
        if let frame = try? FrameCodec.frameHead(DaemonEvent.error(code: code, message: message)) {
            _ = frame.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        }
        Glibc.close(fd)
    }

}
