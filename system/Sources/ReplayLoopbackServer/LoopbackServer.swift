import Dispatch
public import Hummingbird
import HummingbirdCore
public import Logging
public import NIOCore
import ServiceLifecycle
import Synchronization

/// A Hummingbird server on 127.0.0.1: replayd's pages and the WebRTC extension's viewer page
/// both need "listen, then tell me the port, or why not" (replayd awaits it, `Prepared.port`;
/// the extension, which has no task of its own, blocks for it, `start`).
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

    /// A server made, not yet running: whoever owns it runs it (`run`, in a task of theirs, so
    /// cancelling that task stops it), and anyone may wait for the port it got (`port`).
    public struct Prepared: Sendable {
        private let app: SendableApplication<Application<RouterResponder<BasicRequestContext>>>
        private let bound: Bound
        private let requested: Int
        /// Times the awaited wait for the port (`port(within:) async`).
        private let timeoutLoop: (any EventLoop)?
        private let logger: Logger
        /// The service group `run` serves in, for `stop` to shut down.
        private let running = Running()

        fileprivate init(app: Application<RouterResponder<BasicRequestContext>>, bound: Bound, requested: Int,
                         timeoutLoop: (any EventLoop)?, logger: Logger) {
            self.app = SendableApplication(app)
            self.bound = bound
            self.requested = requested
            self.timeoutLoop = timeoutLoop
            self.logger = logger
        }

        /// Listens and serves until `stop`, the calling task's cancellation, or its own service
        /// group's graceful shutdown. A caller blocked in the synchronous `port` must run it off
        /// the cooperative pool (`start` does); one that awaits the port need not.
        public func run() async throws {
            let group = ServiceGroup(configuration: .init(services: [app.value], gracefulShutdownSignals: [], logger: logger))
            let stoppedAlready = running.state.withLock { running in
                running.group = group
                return running.stopped
            }
            if stoppedAlready { await group.triggerGracefulShutdown() }
            do {
                try await group.run()
            } catch {
                bound.settle(.failure(error))
                throw error
            }
            bound.settle(.failure(Failure(description: "stopped before it listened")))
        }

        /// Shuts it down gracefully: it stops listening, the requests in flight are answered,
        /// then `run` returns. No cancellation, so no connection is cut mid-write.
        public func stop() async {
            let group = running.state.withLock { running in
                running.stopped = true
                return running.group
            }
            await group?.triggerGracefulShutdown()
        }

        /// Returns once it listens, saying on which port, holding no thread meanwhile; throws
        /// if it could not, or did not within `seconds` (timed on the event loop it was
        /// prepared with; without one, only its own failure ends the wait).
        public func port(within seconds: Double = 10) async throws -> Int {
            let requested = self.requested, bound = self.bound
            let timeout = timeoutLoop?.scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) {
                bound.settle(.failure(TimedOut()))
            }
            defer { timeout?.cancel() }
            switch await bound.outcome() {
            case .success(let port): return port
            case .failure(let error) where error is TimedOut:
                throw Failure(description: "did not start listening on 127.0.0.1:\(requested) within \(Int(seconds)) s")
            case .failure(let error): throw Failure(description: "cannot listen on 127.0.0.1:\(requested): \(error)")
            }
        }

        /// Blocks until it listens, then says on which port; throws if it could not, or did
        /// not within `seconds`.
        public func port(within seconds: Double = 10) throws -> Int {
            switch bound.wait(within: seconds) {
            case .success(let port)?: return port
            case .failure(let error)?: throw Failure(description: "cannot listen on 127.0.0.1:\(requested): \(error)")
            case nil: throw Failure(description: "did not start listening on 127.0.0.1:\(requested) within \(Int(seconds)) s")
            }
        }
    }

    /// Makes a server of `router` on 127.0.0.1:`port` (0 picks a free one), not yet running.
    /// On `eventLoopGroup` when given (a daemon's own, so the pages cost no thread of their
    /// own); otherwise on NIO's shared one, a thread a core.
    public static func prepare(
        router: Router<BasicRequestContext>, port: Int, serverName: String, limits: Limits = Limits(),
        eventLoopGroup: (any EventLoopGroup)? = nil, logger: Logger
    ) -> Prepared {
        let bound = Bound()
        let headerTimeout = TimeAmount(limits.headerTimeout)
        let app = Application(
            router: router,
            server: .http1(configuration: .init(additionalChannelHandlers: [HeaderDeadline(timeout: headerTimeout)],
                                                idleTimeout: TimeAmount(limits.idleTimeout))),
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: serverName,
                                 availableConnectionsDelegate: MaximumAvailableConnections(limits.connections)),
            onServerRunning: { channel in bound.settle(.success(channel.localAddress?.port ?? port)) },
            eventLoopGroupProvider: eventLoopGroup.map { .shared($0) } ?? .singleton,
            logger: logger)
        return Prepared(app: app, bound: bound, requested: port, timeoutLoop: eventLoopGroup?.next(), logger: logger)
    }

    /// Serves `router` on 127.0.0.1:`port` (0 picks a free one) and returns once it listens:
    /// the port it got and the task running it (cancel it to stop). Throws when it cannot
    /// listen within 10 s. For a program with no task of its own to run it in (an extension).
    public static func start(
        router: Router<BasicRequestContext>, port: Int, serverName: String, limits: Limits = Limits(),
        eventLoopGroup: (any EventLoopGroup)? = nil, logger: Logger
    ) throws -> (port: Int, task: Task<Void, any Error>) {
        let server = prepare(router: router, port: port, serverName: serverName, limits: limits, eventLoopGroup: eventLoopGroup,
                             logger: logger)
        // The caller blocks below until the server listens: the server runs off the pool.
        let task = Task(executorPreference: DispatchTaskExecutor.shared) { try await server.run() }
        do {
            return (try server.port(within: 10), task)
        } catch {
            task.cancel()
            throw error
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

/// A prepared server's service group once it runs, and whether it was asked to stop.
private final class Running: Sendable {
    let state = Mutex<(group: ServiceGroup?, stopped: Bool)>((nil, false))
}

/// The awaited wait for a port ran out of time.
private struct TimedOut: Error {}

/// Where a server's port meets whoever waits for it: the first outcome counts. It is awaited
/// (`outcome`), or waited for on a thread of the caller's (`wait`, for `start`).
private final class Bound: Sendable {
    private typealias Waiter = CheckedContinuation<Result<Int, any Error>, Never>
    private let state = Mutex<(outcome: Result<Int, any Error>?, waiters: [Waiter])>((nil, []))
    private let settled = DispatchSemaphore(value: 0)

    func settle(_ result: Result<Int, any Error>) {
        let waiters = state.withLock { state -> [Waiter]? in
            guard state.outcome == nil else { return nil }
            state.outcome = result
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return }
        settled.signal()
        for waiter in waiters { waiter.resume(returning: result) }
    }

    func outcome() async -> Result<Int, any Error> {
        await withCheckedContinuation { (waiter: Waiter) in
            let known = state.withLock { state -> Result<Int, any Error>? in
                if state.outcome == nil { state.waiters.append(waiter) }
                return state.outcome
            }
            if let known { waiter.resume(returning: known) }
        }
    }

    func wait(within seconds: Double) -> Result<Int, any Error>? {
        if let known = state.withLock({ $0.outcome }) { return known }
        guard settled.wait(timeout: .now() + seconds) == .success else { return nil }
        settled.signal()  // for the next who waits
        return state.withLock { $0.outcome }
    }
}

/// Runs a task's jobs on dispatch's global queue instead of the cooperative pool, so that
/// task makes progress while a thread of the pool waits for it (`start`'s caller blocked
/// until its server listens).
public final class DispatchTaskExecutor: TaskExecutor {
    public static let shared = DispatchTaskExecutor()

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
