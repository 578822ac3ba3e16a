import Synchronization

/// Questions put to a capture process and the handlers waiting for their answers, which the
/// process gives in the order it was asked. No thread waits: each handler runs when its answer
/// is read, or with nil once the process is gone.
final class CaptureAnswers<Answer: Sendable>: Sendable {
    private let state = Mutex<(waiting: [@Sendable (Answer?) -> Void], closed: Bool)>(([], false))

    /// Sends a question with `send` and queues `handler` for its answer, under one lock, so two
    /// questions put at once meet their own answers. A question that cannot be sent (`send`
    /// returns false), or one put once the process is gone, gets nil at once.
    func ask(_ send: () -> Bool, answer handler: @escaping @Sendable (Answer?) -> Void) {
        let sent = state.withLock { state -> Bool in
            guard !state.closed, send() else { return false }
            state.waiting.append(handler)
            return true
        }
        if !sent { handler(nil) }
    }

    /// Hands `answer` to the oldest question; false when no question waits (an answer nobody asked for).
    func answer(_ answer: Answer) -> Bool {
        let handler = state.withLock { state in state.waiting.isEmpty ? nil : state.waiting.removeFirst() }
        handler?(answer)
        return handler != nil
    }

    /// The process is gone: every waiting question gets nil, and so does every later one.
    func close() {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for handler in waiting { handler(nil) }
    }
}
