/// A point or span on the monotonic clock that every capture source stamps with,
/// in nanoseconds. Video and audio share it, which is what keeps them in sync.
public struct MediaTime: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Nanoseconds since the clock's origin (for a point: `CLOCK_MONOTONIC`'s, the boot), or the span's length.
    public var nanoseconds: Int64

    /// A time of `nanoseconds`.
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    /// A time of `seconds`, rounded to the nearest nanosecond.
    public init(seconds: Double) { self.nanoseconds = Int64((seconds * 1e9).rounded()) }

    /// No time: the clock's origin, or an empty span.
    public static let zero = MediaTime(nanoseconds: 0)

    /// The time in seconds (a `Double`: exact to the nanosecond for about 104 days).
    public var seconds: Double { Double(nanoseconds) / 1e9 }

    /// This time in units of `1/timescale` seconds, rounded to the nearest unit.
    public func value(timescale: Int64) -> Int64 {
        let whole = nanoseconds / 1_000_000_000 * timescale
        let rest = nanoseconds % 1_000_000_000 * timescale
        return whole + (rest + (rest >= 0 ? 500_000_000 : -500_000_000)) / 1_000_000_000
    }

    /// The time of sample `index` at `rate` samples per second.
    public static func samples(_ index: Int64, rate: Int) -> MediaTime {
        let rate = Int64(rate)
        return MediaTime(nanoseconds: index / rate * 1_000_000_000 + index % rate * 1_000_000_000 / rate)
    }

    /// A point moved by a span, or two spans added.
    public static func + (a: MediaTime, b: MediaTime) -> MediaTime { MediaTime(nanoseconds: a.nanoseconds + b.nanoseconds) }
    /// The span from `b` to `a`, or a point moved back by a span.
    public static func - (a: MediaTime, b: MediaTime) -> MediaTime { MediaTime(nanoseconds: a.nanoseconds - b.nanoseconds) }
    /// Earlier, or shorter.
    public static func < (a: MediaTime, b: MediaTime) -> Bool { a.nanoseconds < b.nanoseconds }

    /// Whole milliseconds, for logs: "1500 ms".
    public var description: String { "\(nanoseconds / 1_000_000) ms" }
}
