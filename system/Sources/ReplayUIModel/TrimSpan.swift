/// The part of a recording the person keeps: a start and an end within its duration, each
/// moved on its own and kept in order, at least `shortest` apart.
public struct TrimSpan: Sendable, Equatable {
    public static let shortest = 0.1

    public private(set) var duration: Double
    public private(set) var start: Double = 0
    public private(set) var end: Double

    public init(duration: Double) {
        self.duration = max(0, duration)
        end = self.duration
    }

    /// The movie's real length, once the player knows it: an end at the old length follows it.
    public mutating func setDuration(_ seconds: Double) {
        guard seconds.isFinite, seconds > 0 else { return }
        let followed = end >= duration
        duration = seconds
        end = followed ? seconds : min(end, seconds)
        start = min(start, max(0, end - Self.shortest))
    }

    /// Moves the start, within 0 and just before the end.
    public mutating func setStart(_ seconds: Double) {
        guard seconds.isFinite else { return }
        start = min(max(0, seconds), max(0, end - Self.shortest))
    }

    /// Moves the end, within just after the start and the duration.
    public mutating func setEnd(_ seconds: Double) {
        guard seconds.isFinite else { return }
        end = max(min(duration, seconds), min(duration, start + Self.shortest))
    }

    /// What to ask the export for: nil for the whole movie.
    public var exportSpan: (from: Double, to: Double)? {
        start <= 0 && end >= duration ? nil : (start, end)
    }

    /// "Keeps 0:03.0 to 0:07.0 (4.0 s of 10.0 s)".
    public var summary: String {
        guard exportSpan != nil else { return "Keeps all \(Self.clock(duration))" }
        return "Keeps \(Self.clock(start)) to \(Self.clock(end)) (\(Self.seconds(end - start)) of \(Self.seconds(duration)))"
    }

    static func clock(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10).rounded())
        let secondsPart = tenths % 600
        let whole = secondsPart / 10
        return "\(tenths / 600):\(whole < 10 ? "0" : "")\(whole).\(secondsPart % 10)"
    }

    static func seconds(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
