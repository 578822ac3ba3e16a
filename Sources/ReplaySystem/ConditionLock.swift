#if canImport(Glibc)
import Glibc
#endif
public import FoundationEssentials

/// A mutex with a condition to wait on (pthread's), in place of Foundation's `NSCondition`.
public final class ConditionLock: @unchecked Sendable {
    // @unchecked: pthread's mutex and condition are made for sharing between threads.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
    /// Waits for `signal` or `broadcast`; the lock must be held.
    public func wait() { pthread_cond_wait(condition, mutex) }
    /// Waits for `signal`, `broadcast` or `deadline`; false once the deadline passed.
    public func wait(until deadline: Date) -> Bool {
        let seconds = deadline.timeIntervalSince1970
        var time = timespec(tv_sec: Int(seconds.rounded(.down)), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        return pthread_cond_timedwait(condition, mutex, &time) != ETIMEDOUT
    }

    public func signal() { pthread_cond_signal(condition) }
    public func broadcast() { pthread_cond_broadcast(condition) }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
