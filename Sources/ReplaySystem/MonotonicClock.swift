#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC, the one clock video and audio are stamped with.
public enum MonotonicClock {
    public static func nanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// Sleeps until the monotonic clock reaches `deadline` (nanoseconds).
    public static func sleep(until deadline: Int64) {
        var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil) == EINTR {}
    }
}
