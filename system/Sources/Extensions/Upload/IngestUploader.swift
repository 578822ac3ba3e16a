import FoundationEssentials
import Dispatch
public import ReplayCodec
import ReplaySystem
import Synchronization

/// Sends a backlog's packets to an ingest server on a thread of its own, so a slow or lost
/// server never holds up the extension's callbacks (which also answer the daemon's
/// heartbeat). When the server goes away it says "reconnecting", retries with a growing
/// pause (0.5 s doubling to 4 s) while the encoder keeps filling the bounded backlog, and
/// resumes from the oldest whole group of pictures; after `reconnectTimeout` it gives up.
public final class IngestUploader: @unchecked Sendable {
    // @unchecked: `events` and `connect` are set once at init; shared state is in Mutex/Atomic.
    public enum Connection: String, Sendable {
        case connecting
        case live
        case reconnecting
    }

    public enum Event: Sendable {
        case state(Connection, detail: String?)
        /// The stream cannot go on; the broadcast should end with this message.
        case failed(String)
    }

    public struct Policy: Sendable {
        public var reconnects: Bool
        public var reconnectTimeout: Double
        /// The first connection is given this long (at most `reconnectTimeout`): a wrong
        /// address or key should be reported soon, not after a minute.
        public var firstConnectionTimeout: Double
        public var backoff: [Double]

        public init(reconnects: Bool, reconnectTimeout: Double, firstConnectionTimeout: Double = 10,
                    backoff: [Double] = [0.5, 1, 2, 4]) {
            self.reconnects = reconnects
            self.reconnectTimeout = reconnectTimeout
            self.firstConnectionTimeout = min(firstConnectionTimeout, reconnectTimeout)
            self.backoff = backoff
        }
    }

    public let backlog: PacketBacklog
    public let policy: Policy
    private let connect: () throws(CodecError) -> IngestConnection
    private let events: (Event) -> Void
    private let stopping = Atomic<Bool>(false)
    private let keyframeWanted = Atomic<Bool>(false)
    private let current = Mutex<IngestConnection?>(nil)
    private let done = DispatchSemaphore(value: 0)
    private let sent = Atomic<Int>(0)
    private let connectionCount = Atomic<Int>(0)

    public init(backlog: PacketBacklog, policy: Policy, connect: @escaping () throws(CodecError) -> IngestConnection,
                events: @escaping (Event) -> Void) {
        self.backlog = backlog
        self.policy = policy
        self.connect = connect
        self.events = events
    }

    public func start() {
        Threads.detach { [self] in
            run()
            done.signal()
        }
    }

    /// Bytes sent to the server so far.
    public var bytesSent: Int { sent.load(ordering: .relaxed) }

    /// Connections made so far (more than one: it reconnected).
    public var connections: Int { connectionCount.load(ordering: .relaxed) }

    /// True once after the uploader found no keyframe to start a connection with: the
    /// encoder should make the next picture one.
    public func takeKeyframeRequest() -> Bool { keyframeWanted.exchange(false, ordering: .relaxed) }

    /// Sends what is queued for up to `drainTimeout` seconds, ends the stream properly, and
    /// returns; a server that is away gets nothing more.
    public func finish(drainTimeout: Double) {
        stopping.store(true, ordering: .relaxed)
        backlog.close()
        if done.wait(timeout: .now() + drainTimeout) == .timedOut {
            current.withLock { $0?.cancel() }
            _ = done.wait(timeout: .now() + 2)
        }
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    private func run() {
        var outageSince = MonotonicClock.nanoseconds()
        var everConnected = false
        var attempt = 0
        events(.state(.connecting, detail: nil))
        while true {
            let failure: CodecError
            do throws(CodecError) {
                let connection = try connect()
                current.withLock { $0 = connection }
                defer { current.withLock { $0 = nil } }
                connectionCount.add(1, ordering: .relaxed)
                everConnected = true
                attempt = 0
                events(.state(.live, detail: nil))
                try pump(connection)
                try connection.finish()
                return
            } catch {
                failure = error
            }
            if isStopping { return }
            guard policy.reconnects else {
                events(.failed(failure.description))
                return
            }
            if attempt == 0 {
                if everConnected { outageSince = MonotonicClock.nanoseconds() }
                events(.state(.reconnecting, detail: failure.description))
            }
            let limit = everConnected ? policy.reconnectTimeout : policy.firstConnectionTimeout
            let waited = Double(MonotonicClock.nanoseconds() - outageSince) / 1e9
            if waited >= limit {
                let what = everConnected ? "lost the connection and could not reconnect" : "could not connect"
                events(.failed("\(what) for \(Int(limit.rounded())) s: \(failure)"))
                return
            }
            let pause = min(policy.backoff[min(attempt, policy.backoff.count - 1)], max(0.1, limit - waited))
            attempt += 1
            let wakeAt = MonotonicClock.nanoseconds() + Int64(pause * 1e9)
            while MonotonicClock.nanoseconds() < wakeAt && !isStopping { Threads.sleep(seconds: 0.05) }
            if isStopping { return }
        }
    }

    /// Writes packets until the broadcast ends and the backlog is empty; throws when the
    /// connection breaks (the packet that failed stays queued).
    private func pump(_ connection: IngestConnection) throws(CodecError) {
        if !backlog.startAtKeyframe() { keyframeWanted.store(true, ordering: .relaxed) }
        var started = false
        while true {
            guard let packet = backlog.first(timeout: 0.25) else {
                if isStopping && backlog.isEmpty { return }
                continue
            }
            if !started {
                // Whatever came in while waiting for the keyframe is dropped up to it.
                guard packet.track == .video && packet.isKeyframe else {
                    _ = backlog.startAtKeyframe()
                    continue
                }
                started = true
            }
            try connection.write(packet)
            backlog.removeFirst()
            sent.add(packet.byteCount, ordering: .relaxed)
        }
    }
}
