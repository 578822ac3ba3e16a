/// A point or span on the monotonic clock that every capture source stamps with,
/// in nanoseconds. Video and audio share it, which is what keeps them in sync.
public struct MediaTime: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    public init(seconds: Double) { self.nanoseconds = Int64((seconds * 1e9).rounded()) }

    public static let zero = MediaTime(nanoseconds: 0)

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

    public static func + (a: MediaTime, b: MediaTime) -> MediaTime { MediaTime(nanoseconds: a.nanoseconds + b.nanoseconds) }
    public static func - (a: MediaTime, b: MediaTime) -> MediaTime { MediaTime(nanoseconds: a.nanoseconds - b.nanoseconds) }
    public static func < (a: MediaTime, b: MediaTime) -> Bool { a.nanoseconds < b.nanoseconds }

    public var description: String { "\(nanoseconds / 1_000_000) ms" }
}
