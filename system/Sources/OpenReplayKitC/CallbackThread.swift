#if canImport(Glibc)
import Glibc
#endif
import ReplaySystem

/// What a callback reports: each kind has its own callback, and its own generation.
enum CallbackKind: Hashable, Sendable {
    case captureState, frame, broadcast
}

/// The one thread of a client's own that calls the app's callbacks: in order, never two at
/// once, never on a thread of the app's or of Swift's concurrency pool, so a callback may block
/// or call back into the library. While one blocks, capture-state and broadcast changes wait in
/// order; of the pictures only the newest waits (the others are dropped and counted).
final class CallbackThread: @unchecked Sendable {
    // @unchecked: every stored var is read and written only with `condition` locked.
    private struct Job {
        let kind: CallbackKind
        let run: @Sendable () -> Void
    }

    private let condition = ConditionLock()
    private var jobs: [Job] = []
    private var running: CallbackKind?
    private var stopped = false
    private var finished = false
    private var thread: pthread_t?
    private var dropped: UInt64 = 0

    init() {
        Threads.detach { [self] in loop() }
    }

    var droppedFrames: UInt64 { condition.withLock { dropped } }

    /// Whether the caller is this thread (a call from inside a callback).
    var isCurrent: Bool { condition.withLock { thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false } }

    func post(_ kind: CallbackKind, _ run: @escaping @Sendable () -> Void) {
        condition.withLock {
            guard !stopped else { return }
            if kind == .frame, let index = jobs.firstIndex(where: { $0.kind == .frame }) {
                jobs.remove(at: index)
                dropped += 1
            }
            jobs.append(Job(kind: kind, run: run))
            condition.broadcast()
        }
    }

    /// Drops the calls of `kind` not yet made, and waits for one running now to return,
    /// unless called from a callback (which would wait for itself).
    func cancel(_ kind: CallbackKind) {
        let current = isCurrent
        condition.withLock {
            jobs.removeAll { $0.kind == kind }
            while running == kind && !current { condition.wait() }
        }
    }

    /// Ends the thread: what is queued is dropped; a callback running now is waited for
    /// (unless this is called from it: then the thread ends after it returns).
    func stop() {
        let current = isCurrent
        condition.withLock {
            stopped = true
            jobs.removeAll()
            condition.broadcast()
            while !finished && !current { condition.wait() }
        }
    }

    private func loop() {
        Self.nameThisThread("ork-callbacks")
        condition.lock()
        thread = pthread_self()
        while true {
            while jobs.isEmpty && !stopped { condition.wait() }
            if stopped { break }
            let job = jobs.removeFirst()
            running = job.kind
            condition.unlock()
            job.run()
            condition.lock()
            running = nil
            condition.broadcast()
        }
        finished = true
        thread = nil
        condition.broadcast()
        condition.unlock()
    }

    /// What debuggers, top -H and /proc/PID/task/*/comm show (at most 15 bytes), through the
    /// kernel's file for the calling thread (pthread_setname_np is not in Swift's Glibc).
    private static func nameThisThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = name.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
        close(fd)
    }
}
