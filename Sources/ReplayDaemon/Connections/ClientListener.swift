import Foundation
import Logging
import NIOCore
import NIOPosix
import ReplayCaptureModel
import ReplayIPC
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Accepts clients on replayd's socket and hands each to the event loop. One thread
/// accepts; one event-loop thread reads and writes every connection; a connection's
/// requests run on its own serial queue, so an idle client costs no thread at all.
final class ClientListener: Sendable {
    private let listener: Int32
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let stopping = Atomic<Bool>(false)
    private let logger: Logger
    /// Set for a socket a service manager handed over (socket activation). That socket is
    /// shared with the manager, so stopping must not shut it down (it would refuse every
    /// later client); instead the accept loop waits in poll() beside `wake`, and connections
    /// that arrive after the stop stay queued for the next replayd the manager starts.
    private let wake: (read: Int32, write: Int32)?

    init(listener: Int32, inherited: Bool = false, logger: Logger) {
        self.listener = listener
        self.logger = logger
        wake = inherited ? try? Pipe.make() : nil
    }

    /// For an inherited socket: waits until a client is waiting (true) or `stop()` (false).
    private func waitForClient() -> Bool {
        guard let wake else { return true }
        while !stopping.load(ordering: .acquiring) {
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, -1)
            if ready < 0 && errno != EINTR { return false }
            if fds[1].revents != 0 { return false }
            if fds[0].revents & Int16(POLLIN) != 0 { return true }
            if fds[0].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { return false }
        }
        return false
    }

    /// Accepts until `stop()`. `admit` decides, from the socket, who the client is and whether
    /// it may stay: it returns what makes its connection, or nil after telling it why and
    /// closing the socket.
    func serve(admit: @escaping @Sendable (_ fd: Int32) -> (@Sendable (any Channel) -> ClientConnection)?) {
        var complaints = RateLimit(perSecond: 1)
        while !stopping.load(ordering: .acquiring) {
            guard waitForClient() else { break }
            let fd: Int32
            do {
                fd = try UnixSocket.accept(listener)
            } catch {
                let error = error.errno
                if stopping.load(ordering: .acquiring) { break }
                // EAGAIN: an inherited socket may be non-blocking, and its client gone again.
                if error == EINTR || error == ECONNABORTED || error == EAGAIN { continue }
                // Out of descriptors: a flood. Say so once a second at most, and give closing
                // connections a moment instead of spinning on the same error.
                if let unsaid = complaints.admit() {
                    logger.warning("cannot accept a client: \(String(cString: strerror(error)))",
                                   metadata: unsaid > 0 ? ["times since last said": "\(unsaid)"] : [:])
                }
                if error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM {
                    MonotonicClock.sleep(until: MonotonicClock.nanoseconds() + 50_000_000)
                    continue
                }
                if error == EBADF || error == EINVAL { break }
                continue
            }
            guard let connect = admit(fd) else { continue }
            // A client that shuts down its sending side still gets its answers before we close.
            let bootstrap = ClientBootstrap(group: group).channelOption(.allowRemoteHalfClosure, value: true).channelInitializer { channel in
                let connection = connect(channel)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RequestFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(ConnectionHandler(connection: connection))
                }
            }
            bootstrap.withConnectedSocket(fd).whenFailure { [logger] (error: any Error) in
                logger.debug("a client could not be served: \(error)")
            }
        }
    }

    /// Stops accepting; open connections close with the event loop.
    func stop() {
        stopping.store(true, ordering: .releasing)
        if let wake {
            var byte: UInt8 = 1
            _ = Glibc.write(wake.write, &byte, 1)
        } else {
            Glibc.shutdown(listener, Int32(SHUT_RDWR))
        }
    }

    /// Tells a client it may not stay, without waiting for it, and closes its socket.
    static func refuse(_ fd: Int32, code: ErrorCode, message: String) {
        if let frame = try? FrameCodec.frameHead(DaemonEvent.error(code: code, message: message)) {
            _ = frame.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        }
        Glibc.close(fd)
    }

    func closeAll() {
        try? group.syncShutdownGracefully()
    }
}
