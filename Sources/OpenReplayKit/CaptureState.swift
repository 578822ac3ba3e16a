import Dispatch
import FoundationEssentials
import ReplayIPC
import Synchronization

/// Whether the screen is being captured, as ReplayKit's `UIScreen.isCaptured`, with the
/// reasons and a stream of changes, so an app can hide what is secret while it is.
public final class CaptureState: Sendable {
    public static let shared = CaptureState()

    private struct State {
        var link: DaemonLink?
        var current: CaptureStatus?
        var subscribers: [UUID: AsyncStream<CaptureStatus>.Continuation] = [:]
    }

    private let endpoint: DaemonEndpoint
    private let state = Mutex(State())
    private let firstAnswer = DispatchSemaphore(value: 0)

    public init(socket: String? = nil) {
        endpoint = .socket(socket)
    }

    /// A watcher whose connection is a socket `connect` hands out (the SDK's tests).
    @_spi(OpenReplayKitInternal) public init(connect: @escaping @Sendable () throws -> Int32) {
        endpoint = .connector(connect)
    }

    /// True while anything records, broadcasts, mirrors or captures the screen (another
    /// app's in-app capture included). Starts watching on first use; false if replayd is
    /// not running, since then nothing captures through it.
    public var isCaptured: Bool { status.isCaptured }

    public var reasons: [CaptureReason] { status.reasons }

    /// The latest state; waits briefly for the daemon's first answer.
    public var status: CaptureStatus {
        if let current = state.withLock({ $0.current }) { return current }
        try? startWatching()
        _ = firstAnswer.wait(timeout: .now() + 2)
        firstAnswer.signal()
        return state.withLock { $0.current } ?? CaptureStatus(reasons: [])
    }

    /// The current state, then one element per change, in order.
    public func changes() throws(RecordingError) -> AsyncStream<CaptureStatus> {
        try startWatching()
        let (stream, continuation) = AsyncStream.makeStream(of: CaptureStatus.self)
        let id = UUID()
        // Under the lock, so a change arriving now cannot overtake the current state.
        state.withLock { state in
            state.subscribers[id] = continuation
            if let current = state.current { continuation.yield(current) }
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) } }
        return stream
    }

    /// Hangs up: the changes' streams finish; a later use connects again (the C library's
    /// `ork_client_free`).
    @_spi(OpenReplayKitInternal) public func close() {
        state.withLock { $0.link }?.close()
    }

    private func startWatching() throws(RecordingError) {
        guard state.withLock({ $0.link == nil }) else { return }
        let link = try DaemonLink.openNow(endpoint)
        let installed = state.withLock { state -> Bool in
            guard state.link == nil else { return false }
            state.link = link
            return true
        }
        guard installed else {
            link.close()
            return
        }
        link.startReading { [weak self] event, _ in self?.receive(event) }
        try link.send(.watchCaptureState)
    }

    private func receive(_ event: DaemonEvent?) {
        guard let event else {
            // The daemon went away: nothing captures through it any more.
            let subscribers = state.withLock { state in
                state.link = nil
                state.current = nil
                return Array(state.subscribers.values)
            }
            for subscriber in subscribers { subscriber.finish() }
            return
        }
        guard case .captureState(let update) = event else { return }
        let status = CaptureStatus(update)
        let first = state.withLock { state in
            defer { state.current = status }
            for subscriber in state.subscribers.values { subscriber.yield(status) }
            return state.current == nil
        }
        if first { firstAnswer.signal() }
    }
}
