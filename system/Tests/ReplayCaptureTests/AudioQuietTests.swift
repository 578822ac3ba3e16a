import ReplayMedia
import Testing
@testable import ReplayCapture

/// How long a microphone must keep quiet before the reads held so far go out: half a read for
/// a steady source, 100 ms while a block is being handed over (sound that came faster than it
/// plays), so a stall inside a block's delivery does not date the block by a part of it.
@Suite struct AudioQuietTests {
    static let read = AudioCapture.readFrames
    static func milliseconds(_ value: Int64) -> Double { Double(value) / 1e6 }

    @Test func aSteadySourceGoesOutAfterHalfARead() {
        // One read held, just arrived; two reads held that took a read's time to come.
        #expect(Self.milliseconds(AudioCapture.quietBeforeFlush(pendingFrames: Self.read, pendingFor: 0)) == 5)
        #expect(Self.milliseconds(AudioCapture.quietBeforeFlush(pendingFrames: 2 * Self.read, pendingFor: 10_000_000)) == 5)
        // A source a little behind (three reads in 8 ms) is not yet a block.
        #expect(Self.milliseconds(AudioCapture.quietBeforeFlush(pendingFrames: 3 * Self.read, pendingFor: 8_000_000)) == 5)
    }

    @Test func aBlockBeingHandedOverWaitsFor100Milliseconds() {
        // Ten reads (100 ms of sound) in 2 ms, and a whole 2 s block in 30 ms.
        #expect(Self.milliseconds(AudioCapture.quietBeforeFlush(pendingFrames: 10 * Self.read, pendingFor: 2_000_000)) == 100)
        #expect(Self.milliseconds(AudioCapture.quietBeforeFlush(pendingFrames: 96_000, pendingFor: 30_000_000)) == 100)
        // A clock that went backwards counts as no time.
        #expect(Self.milliseconds(AudioCapture.quietBeforeFlush(pendingFrames: 10 * Self.read, pendingFor: -5)) == 100)
    }
}
