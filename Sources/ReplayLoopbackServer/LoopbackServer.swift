import Dispatch
public import Hummingbird
import HummingbirdCore
public import Logging
public import NIOCore
import Synchronization

/// A Hummingbird server on 127.0.0.1, started from synchronous code: replayd's pages and the
/// WebRTC extension's viewer page both need "listen, then tell me the port, or why not".
public enum LoopbackServer {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// What one client may hold of the server. Any local user can connect to a loopback
    /// port: without these, a few thousand idle connections took every descriptor the
    /// process had, and held them.
    public struct Limits: Sendable {
        /// Connections open at once; past it new ones wait in the kernel's queue, unaccepted,
        /// so they cost the process no descriptor.
        public var connections: Int
        /// A connection that sends nothing for this long is closed.
        public var idleTimeout: Duration
        /// A connection whose first request's head has not arrived by then is closed (one that
        /// trickles a byte at a time is never idle).
        public var headerTimeout: Duration

        public init(connections: Int = 128, idleTimeout: Duration = .seconds(15), headerTimeout: Duration = .seconds(10)) {
            self.connections = connections
            self.idleTimeout = idleTimeout
            self.headerTimeout = headerTimeout
        }
    }

    /// Serves `router` on 127.0.0.1:`port` (0 picks a free one) and returns once it listens:
    /// the port it got and the task running it (cancel it to stop). Throws when it cannot
    /// listen within 10 s. On `eventLoopGroup` when given (a daemon's own, so the pages cost
    /// no thread of their own); otherwise on NIO's shared one, a thread a core.
    public static func start(
        router: Router<BasicRequestContext>, port: Int, serverName: String, limits: Limits = Limits(),
        eventLoopGroup: (any EventLoopGroup)? = nil, logger: Logger
    ) throws -> (port: Int, task: Task<Void, any Error>) {
        let bound = Mutex<Result<Int, any Error>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let headerTimeout = TimeAmount(limits.headerTimeout)
        let app = Application(
            router: router,
            server: .http1(configuration: .init(additionalChannelHandlers: [HeaderDeadline(timeout: headerTimeout)],
                                                idleTimeout: TimeAmount(limits.idleTimeout))),
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: serverName,
                                 availableConnectionsDelegate: MaximumAvailableConnections(limits.connections)),
            onServerRunning: { channel in
                bound.withLock { $0 = .success(channel.localAddress?.port ?? port) }
                ready.signal()
            },
            eventLoopGroupProvider: eventLoopGroup.map { .shared($0) } ?? .singleton,
            logger: logger)
        let server = SendableApplication(app)
        let task = Task {
            do {
                try await server.value.run()
            } catch {
                bound.withLock { if $0 == nil { $0 = .failure(error) } }
                ready.signal()
                throw error
            }
        }
        guard ready.wait(timeout: .now() + 10) == .success else {
            task.cancel()
            throw Failure(description: "did not start listening on 127.0.0.1:\(port) within 10 s")
        }
        // Both signal only after setting `bound`, so nil cannot happen; it would be a failure.
        switch bound.withLock({ $0 }) {
        case .success(let port)?: return (port, task)
        case .failure(let error)?: throw Failure(description: "cannot listen on 127.0.0.1:\(port): \(error)")
        case nil:
            task.cancel()
            throw Failure(description: "did not start listening on 127.0.0.1:\(port)")
        }
    }

    /// Compares secrets in time that depends only on their lengths, so timing tells nothing of
    /// how much of a guess was right.
    public static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// `bytes` random bytes from the system's CSPRNG (getrandom(2)) as hex: for tokens in URLs.
    public static func randomToken(bytes: Int = 16) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in
            let byte = UInt8.random(in: .min ... .max, using: &generator)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }
}

/// The application is handed to the task that runs it and never touched here again.
private struct SendableApplication<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Closes a connection whose first request's head has not arrived in time. It sits after
/// HTTP decoding, so the first thing it reads is a whole request head.
private final class HeaderDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Any

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: timeout) { loopBound.value.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }
}
