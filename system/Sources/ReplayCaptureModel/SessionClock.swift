public import ReplayMedia
import ReplaySystem

/// The clock samples are stamped with; sessions read "now" from it for starts, pauses and stops.
public protocol SessionClock: Sendable {
    func now() -> MediaTime
}

public struct MonotonicSessionClock: SessionClock {
    public init() {}
    public func now() -> MediaTime { MediaTime(nanoseconds: MonotonicClock.nanoseconds()) }
}
