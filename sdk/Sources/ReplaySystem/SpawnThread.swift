#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization

/// One thread that lives as long as the process and starts the children whose parent-death
/// signal matters (bwrap's --die-with-parent): Linux sends it when the *thread* that forked
/// the child ends, and dispatch's worker threads come and go.
final class SpawnThread: Sendable {
    static let shared = SpawnThread()
    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let pending = DispatchSemaphore(value: 0)
    /// False if the thread could not be made: spawns then run on the caller's thread.
    private let running = Atomic(true)

    private init() {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(&thread, nil, { context in
            let owner = Unmanaged<SpawnThread>.fromOpaque(context!).takeRetainedValue()
            owner.serve()
        }, context)
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<SpawnThread>.fromOpaque(context).release()
            running.store(false, ordering: .relaxed)
        }
    }

    private func serve() -> Never {
        while true {
            pending.wait()
            let job = jobs.withLock { $0.removeFirst() }
            job()
        }
    }

    /// Runs `body` on this thread and returns its result.
    func run(_ body: @escaping @Sendable () -> Int32) -> Int32 {
        guard running.load(ordering: .relaxed) else { return body() }
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Int32>(0)
        jobs.withLock {
            $0.append {
                result.withLock { $0 = body() }
                done.signal()
            }
        }
        pending.signal()
        done.wait()
        return result.withLock { $0 }
    }
}
