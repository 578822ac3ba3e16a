import ReplayIPC
import Synchronization

/// Events from one daemon connection, waiting for the async code that asks for them. Filled
/// by the link's reader thread; read by one task at a time.
final class EventInbox: Sendable {
    typealias Entry = (event: DaemonEvent?, body: [UInt8])

    private struct State {
        var queued: [Entry] = []
        /// Resumed with the next entry, or nil when its task is cancelled.
        var waiter: CheckedContinuation<Entry?, Never>?
        var closed = false
    }

    private let state = Mutex(State())

    /// Called by the reader; nil means the connection ended.
    func push(_ event: DaemonEvent?, _ body: [UInt8]) {
        // Progress reports only matter to a live display, which apps do not have here.
        if case .progress = event { return }
        let waiter = state.withLock { state -> CheckedContinuation<Entry?, Never>? in
            if state.closed { return nil }
            if event == nil { state.closed = true }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.queued.append((event, body))
            return nil
        }
        waiter?.resume(returning: (event, body))
    }

    /// The next event; `event` is nil once the connection has ended (and stays nil). A
    /// cancelled task gets `cancelled` at once when `cancellable`; the event it did not
    /// take stays queued.
    func next(cancellable: Bool = true) async throws(RecordingError) -> Entry {
        let entry: Entry?
        if cancellable {
            entry = await withTaskCancellationHandler {
                await wait(cancellable: true)
            } onCancel: {
                let waiter = state.withLock { state in
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume(returning: nil)
            }
        } else {
            entry = await wait(cancellable: false)
        }
        guard let entry else { throw RecordingError(.cancelled, "cancelled while waiting for replayd") }
        return entry
    }

    private func wait(cancellable: Bool) async -> Entry? {
        await withCheckedContinuation { continuation in
            // Under the lock: a cancellation handler running now either finds the waiter or
            // has already marked the task cancelled.
            let ready = state.withLock { state -> Entry?? in
                if !state.queued.isEmpty { return .some(state.queued.removeFirst()) }
                if state.closed { return .some((nil, [])) }
                if cancellable && Task.isCancelled { return .some(nil) }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
