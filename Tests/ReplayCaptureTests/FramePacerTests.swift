@testable import ReplayCapture
import Testing

@Suite struct FramePacerTests {
    let interval: Int64 = 33_333_333

    /// Feeds changes at `period` with a phase offset and returns when each was captured.
    func captures(changesEvery period: Int64, phase: Int64, count: Int) -> [(change: Int64, capture: Int64)] {
        var pacer = FramePacer(interval: interval, now: 0)
        _ = pacer.take(at: 0)  // the first frame, at an arbitrary moment
        var result: [(Int64, Int64)] = []
        var now: Int64 = 0
        for index in 0..<count {
            let change = phase + Int64(index) * period
            now = max(now, change)
            if !pacer.take(at: now) {
                now = pacer.nextFrame(after: now)
                let taken = pacer.take(at: now)
                #expect(taken)
            }
            result.append((change, now))
        }
        return result
    }

    @Test(arguments: [1_000_000, 16_000_000, 32_000_000] as [Int64])
    func contentAtTheCaptureRateIsTakenRightAfterEachDraw(phase: Int64) {
        for (change, capture) in captures(changesEvery: interval, phase: phase, count: 300).dropFirst(2) {
            #expect(capture - change < 1_000_000)
        }
    }

    @Test func fasterContentIsCappedToTheRateOnAverage() {
        let taken = captures(changesEvery: interval / 2, phase: 5_000_000, count: 600)
        // Each change is captured in turn, so the captures spread out to the capped rate.
        let span = Double(taken.last!.capture - taken[100].capture) / 1e9
        let rate = Double(taken.count - 101) / span
        #expect(abs(rate - 30) < 0.5, "rate \(rate)")
    }

    @Test func atMostTwoFramesComeBackToBack() {
        var pacer = FramePacer(interval: interval, now: 0)
        let now = 10 * interval
        let first = pacer.take(at: now), second = pacer.take(at: now), third = pacer.take(at: now)
        #expect(first && second && !third)
        let next = pacer.nextFrame(after: now)
        #expect(next > now && next <= now + interval + 1)
    }
}
