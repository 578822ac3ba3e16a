/// Caps the frame rate with a token bucket, at most three tokens saved up.
///
/// A change is captured the moment it is reported whenever a token is there, so content
/// drawn at the capture rate is taken right after each draw, whatever its phase; faster
/// content is taken at the capped rate on average. Tokens come 5% faster than `interval`:
/// with content drawn at exactly the capped rate, a strict cap would keep any delay forever
/// (catching up means one shorter interval), and a fixed grid of slots would lock onto the
/// phase of the first capture, holding every frame back by up to an interval.
struct FramePacer {
    let interval: Int64
    /// Time between tokens: the interval less the slack that lets capture catch up.
    let refillInterval: Int64
    // Starting full leaves a token to spare after the first frame, so even the first second
    // of content drawn at the capped rate is taken without delay.
    private var tokens: Double = 3
    private var refilled: Int64
    private static let capacity: Double = 3

    init(interval: Int64, now: Int64) {
        self.interval = interval
        refillInterval = interval * 100 / 105
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
        return tokens >= 1 ? now : now + Int64((1 - tokens) * Double(refillInterval)) + 1
    }

    private mutating func refill(at now: Int64) {
        tokens = min(Self.capacity, tokens + Double(now - refilled) / Double(refillInterval))
        refilled = now
    }
}
