/// Caps the frame rate with a token bucket: a token every `interval`, at most two saved up.
///
/// A change is captured the moment it is reported whenever a token is there, so content
/// drawn at the capture rate is taken right after each draw, whatever its phase; faster
/// content is taken at the capped rate on average. (A fixed grid of slots instead locks
/// onto the phase of the first capture and can hold every frame back by most of an interval.)
struct FramePacer {
    let interval: Int64
    private var tokens: Double = 2
    private var refilled: Int64
    private static let capacity: Double = 2

    init(interval: Int64, now: Int64) {
        self.interval = interval
        refilled = now
    }

    /// Spends a token if one is there at `now`.
    mutating func take(at now: Int64) -> Bool {
        refill(at: now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// When the next token will be there.
    mutating func nextFrame(after now: Int64) -> Int64 {
        refill(at: now)
        return tokens >= 1 ? now : now + Int64((1 - tokens) * Double(interval)) + 1
    }

    private mutating func refill(at now: Int64) {
        tokens = min(Self.capacity, tokens + Double(now - refilled) / Double(interval))
        refilled = now
    }
}
