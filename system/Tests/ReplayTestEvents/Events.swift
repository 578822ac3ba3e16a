import Dispatch
import Synchronization

/// What a callback reports from any thread, awaited by a test in the order it came. A unit test
/// awaits the event it needs instead of blocking a thread on a semaphore; every wait has a
/// deadline, so a test whose event never comes fails instead of hanging. The deadline only bounds
/// how long a failing test takes: nothing is timed by it.
public final class Events<Value: Sendable>: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Value?, Never>
    }

    private struct State {
        var pending: [Value] = []
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Reports one event: to the oldest waiter, or kept for the next `next(within:)`.
    public func record(_ value: Value) {
        let waiter = state.withLock { state -> Waiter? in
            guard !state.waiters.isEmpty else {
                state.pending.append(value)
                return nil
            }
            return state.waiters.removeFirst()
        }
        waiter?.continuation.resume(returning: value)
    }

    /// The next event, holding no thread meanwhile; nil if none came within `seconds`.
    public func next(within seconds: Double) async -> Value? {
        await withCheckedContinuation { continuation in
            let (ready, id) = state.withLock { state -> (Value?, UInt64) in
                if !state.pending.isEmpty { return (state.pending.removeFirst(), 0) }
                state.nextID += 1
                state.waiters.append(Waiter(id: state.nextID, continuation: continuation))
                return (nil, state.nextID)
            }
            if let ready { return continuation.resume(returning: ready) }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [weak self] in
                let expired = self?.state.withLock { state -> Waiter? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index)
                }
                expired?.continuation.resume(returning: nil)
            }
        }
    }

    /// Forgets the events that came and nobody awaited yet.
    public func discardPending() { state.withLock { $0.pending = [] } }
}

extension Events where Value == Void {
    public func record() { record(()) }

    /// Whether the next event came within `seconds`.
    public func happened(within seconds: Double) async -> Bool { await next(within: seconds) != nil }
}
