import ReplayVirtualDesktop
import Testing

/// The demo scene's beep placement, against a simulated sink that keeps exact time and a
/// latency estimate that jitters and wanders as PulseAudio's does after a stall.
@Suite struct PlaybackAnchorTests {
    static let rate = 48_000
    static let chunk: Int64 = 240
    static let buffer: Int64 = 250_000_000

    /// A writer that keeps the stream's buffer full: it writes sample n a buffer ahead of when
    /// the sink plays it, and reads a latency that is `error(n)` off the truth.
    struct Stream {
        var heardFrom: Int64 = 5_000_000_000  // when sample 0 is truly heard
        var written: Int64 = 0
        var anchor = PlaybackAnchor(sampleRate: PlaybackAnchorTests.rate)

        func trueTime(of index: Int64) -> Int64 { heardFrom + index * 1_000_000_000 / Int64(PlaybackAnchorTests.rate) }

        /// Writes one chunk at `now` (by default, a buffer ahead) and returns how far its
        /// placement is from the truth, in nanoseconds.
        mutating func write(error: Int64, now: Int64? = nil) -> Int64 {
            let now = now ?? trueTime(of: written) - PlaybackAnchorTests.buffer
            let latency = trueTime(of: written) - now + error
            let placed = anchor.timeOfSample(written, latency: latency, now: now)
            defer { written += PlaybackAnchorTests.chunk }
            return placed - trueTime(of: written)
        }

        /// Writes `seconds` of audio, each reading off by `error(second, chunk)`; the placements' errors.
        mutating func play(seconds: Double, error: (Int64) -> Int64) -> [Int64] {
            let chunks = Int64(seconds * Double(PlaybackAnchorTests.rate)) / PlaybackAnchorTests.chunk
            return (0..<chunks).map { error($0) }.map { write(error: $0) }
        }
    }

    /// ±3 ms of jitter, alternating, as readings do between timing updates.
    static func jitter(_ chunk: Int64) -> Int64 { chunk % 2 == 0 ? 3_000_000 : -3_000_000 }

    @Test func aWanderingLatencyEstimateDoesNotMoveTheBeepsOnceSettled() {
        var stream = Stream()
        _ = stream.play(seconds: 3, error: Self.jitter)
        // The estimate drifts 25 ms off over two seconds and back over three, as it did on a
        // loaded machine: the sink kept time, so the beeps must not follow it.
        let wander = stream.play(seconds: 5) { chunk in
            let seconds = Double(chunk * Self.chunk) / Double(Self.rate)
            let off = seconds < 2 ? seconds / 2 : max(0, 1 - (seconds - 2) / 3)
            return Self.jitter(chunk) + Int64(off * 25_000_000)
        }
        #expect(wander.allSatisfy { abs($0) <= 1_000_000 }, "worst \(wander.map(abs).max() ?? 0) ns")
        #expect(stream.anchor.restarts == 0)
    }

    @Test func aStarvedStreamIsPlacedAnewAfterTheUnderrun() {
        var stream = Stream()
        _ = stream.play(seconds: 3, error: Self.jitter)
        // The writer stalls 400 ms, longer than the buffer: the sink ran dry for 150 ms and
        // plays everything after that much later.
        let now = stream.trueTime(of: stream.written) + 150_000_000
        stream.heardFrom += 150_000_000
        _ = stream.write(error: 0, now: now)
        #expect(stream.anchor.restarts == 1)
        let after = stream.play(seconds: 3, error: Self.jitter)
        #expect(after.suffix(100).allSatisfy { abs($0) <= 1_000_000 }, "last \(after.suffix(5))")
    }

    @Test func aSustainedLargeDisagreementStartsTheAveragingOver() {
        var stream = Stream()
        _ = stream.play(seconds: 3, error: Self.jitter)
        // The sink's latency grew by 60 ms without the stream starving (a new sink latency).
        stream.heardFrom += 60_000_000
        let after = stream.play(seconds: 3) { Self.jitter($0) }
        #expect(stream.anchor.restarts == 1)
        #expect(after.suffix(100).allSatisfy { abs($0) <= 1_000_000 }, "last \(after.suffix(5))")
    }

    @Test func theFirstReadingsArePlacedAtOnceThenAveraged() {
        var stream = Stream()
        let first = stream.write(error: 0)
        #expect(first == 0)
        let settled = stream.play(seconds: 3, error: Self.jitter)
        #expect(settled.suffix(100).allSatisfy { abs($0) <= 1_000_000 }, "last \(settled.suffix(5))")
    }
}
