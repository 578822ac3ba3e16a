#if canImport(Glibc)
import Glibc
#endif

/// Threads of our own without Foundation's `Thread`, which would load Foundation and ICU
/// into every executable (issue 48).
public enum Threads {
    /// Runs `body` on a new detached thread; on the caller's when no thread can be made.
    public static func detach(_ body: @escaping @Sendable () -> Void) {
        final class Box { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        let created = pthread_create(&thread, nil, { context in
            Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().body()
            return nil
        }, context)
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Box>.fromOpaque(context).takeRetainedValue().body()
        }
    }

    /// Blocks the calling thread for `seconds` (whatever signals arrive meanwhile).
    public static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var wait = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var rest = timespec()
        while nanosleep(&wait, &rest) != 0 && errno == EINTR { wait = rest }
    }
}
