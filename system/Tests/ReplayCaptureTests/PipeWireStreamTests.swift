@testable import ReplayCapture
import Testing

/// How a frame from the compositor is dated.
@Suite struct PipeWireStreamTests {
    @Test func aFrameIsDatedWhenTheCompositorDrewIt() {
        let now: Int64 = 50_000_000_000
        // mutter stamps a frame as it paints it, a little before we take it.
        #expect(PipeWireStream.captureTime(pts: now - 12_000_000, now: now) == now - 12_000_000)
    }

    @Test func aStampThatIsNotOnOurClockIsNotBelieved() {
        let now: Int64 = 50_000_000_000
        #expect(PipeWireStream.captureTime(pts: -1, now: now) == now, "no header")
        #expect(PipeWireStream.captureTime(pts: 0, now: now) == now, "no time in it")
        #expect(PipeWireStream.captureTime(pts: now + 5_000_000, now: now) == now, "in the future: another clock")
        #expect(PipeWireStream.captureTime(pts: 1_000_000, now: now) == now, "long ago: another clock (or a frame stuck in a queue)")
    }
}
