/// Lets at most `perSecond` events through in each second and counts the rest, so a flood
/// is reported in a few log lines ("and N more") instead of one line per event.
public struct RateLimit: Sendable {
    public let perSecond: Int
    private var windowStart: Int64?
    private var passedInWindow = 0
    private var heldBack = 0

    public init(perSecond: Int) { self.perSecond = perSecond }

    /// nil when this event is held back; otherwise how many were held back since the last
    /// one that passed.
    public mutating func admit(now: Int64 = MonotonicClock.nanoseconds()) -> Int? {
        if windowStart.map({ now - $0 >= 1_000_000_000 }) ?? true {
            windowStart = now
            passedInWindow = 0
        }
        guard passedInWindow < perSecond else {
            heldBack += 1
            return nil
        }
        passedInWindow += 1
        defer { heldBack = 0 }
        return heldBack
    }
}
