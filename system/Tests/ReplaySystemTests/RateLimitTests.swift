import ReplaySystem
import Testing

@Suite struct RateLimitTests {
    @Test func aFloodPassesAFewASecondAndCountsTheRest() {
        var limit = RateLimit(perSecond: 2)
        let second: Int64 = 1_000_000_000
        #expect(limit.admit(now: 0) == 0)
        #expect(limit.admit(now: 1) == 0)
        #expect(limit.admit(now: 2) == nil)
        #expect(limit.admit(now: second - 1) == nil)
        // A new second: the next one through says how many were held back.
        #expect(limit.admit(now: second) == 2)
        #expect(limit.admit(now: second + 1) == 0)
        #expect(limit.admit(now: 5 * second) == 0)
    }
}
