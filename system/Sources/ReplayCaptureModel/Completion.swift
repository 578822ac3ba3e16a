import Dispatch
package import ReplaySystem
import Synchronization

/// A one-shot event carrying a value: handlers added before it happens run when it does,
/// handlers added after run at once, and a thread may block until it happens.
package final class Completion<Value: Sendable>: Sendable {
    private let state = Mutex<(value: Value?, handlers: [@Sendable (Value) -> Void])>((nil, []))

    package init() {}

    package var value: Value? { state.withLock { $0.value } }

    /// Happens once; later calls are ignored.
    package func complete(_ value: Value) {
        let handlers = state.withLock { state -> [@Sendable (Value) -> Void] in
            guard state.value == nil else { return [] }
            state.value = value
            defer { state.handlers = [] }
            return state.handlers
        }
        for handler in handlers { handler(value) }
    }

    package func onComplete(_ handler: @escaping @Sendable (Value) -> Void) {
        let ready = state.withLock { state -> Value? in
            if state.value == nil { state.handlers.append(handler) }
            return state.value
        }
        if let ready { handler(ready) }
    }

    /// Waits, holding no thread, until it happens.
    package func finished() async -> Value {
        await withCheckedContinuation { waiter in onComplete { waiter.resume(returning: $0) } }
    }

    /// Waits, holding no thread, until it happens or `seconds` have passed on `timers` (then nil).
    package func finished(within seconds: Double, on timers: any Timers) async -> Value? {
        await withCheckedContinuation { waiter in onComplete(within: seconds, on: timers) { waiter.resume(returning: $0) } }
    }

    /// Runs `handler` once: with the value when it happens, or with nil once `seconds` have
    /// passed first on `timers` (on a global queue). No thread waits meanwhile.
    package func onComplete(within seconds: Double, on timers: any Timers, _ handler: @escaping @Sendable (Value?) -> Void) {
        let handled = Atomic(false)
        let timeout = timers.after(seconds) {
            if !handled.exchange(true, ordering: .relaxed) { handler(nil) }
        }
        onComplete { value in
            guard !handled.exchange(true, ordering: .relaxed) else { return }
            timeout.cancel()
            handler(value)
        }
    }

    /// Blocks the calling thread until it happens.
    package func wait() -> Value {
        if let value { return value }
        let happened = DispatchSemaphore(value: 0)
        let result = Mutex<Value?>(nil)
        onComplete { value in
            result.withLock { $0 = value }
            happened.signal()
        }
        happened.wait()
        return result.withLock { $0! }  // set before the signal
    }
}
