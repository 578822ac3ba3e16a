import ReplayCaptureModel
import ReplayIPC
import Synchronization

/// The one answer of a call that takes a callback (a session's start, the person's consent, a
/// capture process's end), awaited by a connection's task without holding a thread.
///
/// Cancellation (replayd stopping) ends the wait at once with `shuttingDown`; the answer, if
/// it comes after that, goes to `late`, which ends what it started. A second answer is ignored.
func awaitAnswer<Value: Sendable>(_ ask: (@escaping @Sendable (Value) -> Void) -> Void,
                                  late: @escaping @Sendable (Value) -> Void = { _ in }) async throws -> Value {
    let wait = AnswerWait<Value>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { waiter in
            guard wait.park(waiter) else { return waiter.resume(throwing: AnswerWait<Value>.shuttingDown) }
            ask { value in wait.answer(value, late: late) }
        }
    } onCancel: {
        wait.cancel()
    }
}

/// Where an awaited answer meets its waiter, whichever comes first.
private final class AnswerWait<Value: Sendable>: Sendable {
    static var shuttingDown: DaemonError { DaemonError(code: .busy, message: "replayd is shutting down") }

    private enum State {
        case waiting(CheckedContinuation<Value, any Error>?)
        case cancelled
        case answered
    }

    private let state = Mutex(State.waiting(nil))

    /// Keeps the waiter until the answer or the cancellation; false if cancelled already.
    func park(_ waiter: CheckedContinuation<Value, any Error>) -> Bool {
        state.withLock { state in
            guard case .waiting = state else { return false }
            state = .waiting(waiter)
            return true
        }
    }

    func answer(_ value: Value, late: @Sendable (Value) -> Void) {
        let (waiter, wasCancelled) = state.withLock { state -> (CheckedContinuation<Value, any Error>?, Bool) in
            defer { state = .answered }
            switch state {
            case .waiting(let waiter): return (waiter, false)
            case .cancelled: return (nil, true)
            case .answered: return (nil, false)
            }
        }
        if let waiter { waiter.resume(returning: value) } else if wasCancelled { late(value) }
    }

    func cancel() {
        let waiter = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard case .waiting(let waiter) = state else { return nil }
            state = .cancelled
            return waiter
        }
        waiter?.resume(throwing: Self.shuttingDown)
    }
}
