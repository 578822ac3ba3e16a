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

    @Test func aDelayIsCaughtUpWithinAFewFrames() {
        var pacer = FramePacer(interval: interval, now: 0)
        // The bucket is empty and a draw had to wait 30 ms: later draws must catch up.
        _ = pacer.take(at: 0)
        _ = pacer.take(at: 0)
        _ = pacer.take(at: 0)
        var now: Int64 = 0
        var lag: [Int64] = []
        for index in 1...40 {
            let draw = Int64(index) * interval - 30_000_000
            now = max(now, draw)
            if !pacer.take(at: now) {
                now = pacer.nextFrame(after: now)
                _ = pacer.take(at: now)
            }
            lag.append(now - draw)
        }
        #expect(lag.first! > 20_000_000)
        #expect(lag.suffix(10).allSatisfy { $0 < 1_000_000 }, "lags \(lag)")
    }

    @Test func fasterContentIsCappedToTheRateOnAverage() {
        let taken = captures(changesEvery: interval / 2, phase: 5_000_000, count: 600)
        // Each change is captured in turn, so the captures spread out to the capped rate.
        let span = Double(taken.last!.capture - taken[100].capture) / 1e9
        let rate = Double(taken.count - 101) / span
        #expect(rate > 29.5 && rate < 31.6, "rate \(rate)")
    }

    @Test func atMostThreeFramesComeBackToBack() {
        var pacer = FramePacer(interval: interval, now: 0)
        let now = 10 * interval
        let burst = (0..<4).map { _ in pacer.take(at: now) }
        #expect(burst == [true, true, true, false])
        let next = pacer.nextFrame(after: now)
        #expect(next > now && next <= now + interval)
    }
}
