import ReplayMedia
import ReplayProcessing
import Testing

@Suite struct AudioTimelineTests {
    let origin = MediaTime(seconds: 100)

    func buffer(at seconds: Double, frames: Int = 480, value: Float = 1) -> AudioBuffer {
        AudioBuffer(source: .app, time: origin + MediaTime(seconds: seconds), sampleRate: 48_000, channels: 2,
                    samples: [Float](repeating: value, count: frames * 2))
    }

    /// Ten contiguous 10 ms buffers starting at `start`, each stamp off by `jitter(index)`.
    func settle(_ timeline: inout AudioTimeline, start: Double, jitter: (Int) -> Double = { _ in 0 }) -> [Float] {
        (0..<10).flatMap { index in timeline.place(buffer(at: start + Double(index) * 0.01 + jitter(index))) }
    }

    @Test func nothingIsEmittedUntilTheStartIsPlaced() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        for index in 0..<9 { #expect(timeline.place(buffer(at: Double(index) * 0.01)).isEmpty) }
        #expect(timeline.place(buffer(at: 0.09)).count == 10 * 480 * 2)
    }

    @Test func audioThatStartsLateIsLedBySilence() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        let placed = settle(&timeline, start: 0.1)
        #expect(placed.count == (4800 + 4800) * 2)
        #expect(placed.prefix(4800 * 2).allSatisfy { $0 == 0 })
        #expect(placed.suffix(4800 * 2).allSatisfy { $0 == 1 })
        #expect(timeline.insertedFrames == 4800)
    }

    @Test func oneBadStampAmongTheFirstBuffersDoesNotPlaceTheStart() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        // The first read is dated 30 ms late (no timing from the server yet); the rest agree.
        let placed = settle(&timeline, start: 0.05) { $0 == 0 ? 0.03 : 0 }
        #expect(placed.count == (2400 + 4800) * 2)
    }

    @Test func audioFromBeforeTheOriginIsDropped() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        let placed = settle(&timeline, start: -0.005)
        #expect(placed.count == (4800 - 240) * 2)
        #expect(timeline.droppedFrames == 240)
    }

    @Test func jitteryStampsOfContinuousAudioAreNotObeyed() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        var total = 0
        for index in 0..<500 {
            // ±3 ms of jitter around the true time of each 10 ms buffer.
            let jitter = Double((index * 7919) % 7 - 3) / 1000
            total += timeline.place(buffer(at: Double(index) * 0.01 + jitter)).count
        }
        #expect(total == 500 * 480 * 2)
        #expect(timeline.insertedFrames == 0 && timeline.droppedFrames == 0)
    }

    @Test func aClockThatRunsFastIsFollowedWithinTheTolerance() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        // The stamps say 1% more time passes than the samples cover: silence must be inserted.
        for index in 0..<1000 {
            _ = timeline.place(buffer(at: Double(index) * 0.0101))
            guard index >= 10 else { continue }
            let expected = Double(index) * 0.0101 * 48_000
            #expect(abs(Double(timeline.nextIndex - 480) - expected) < 0.008 * 48_000)
        }
        #expect(timeline.insertedFrames > 0)
    }

    @Test func aGapInCaptureIsFilledWithSilenceAtOnce() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        _ = settle(&timeline, start: 0)
        let placed = timeline.place(buffer(at: 0.6))
        #expect(placed.count == (24_000 + 480) * 2)
        #expect(timeline.nextIndex == 28_800 + 480)
    }

    @Test func paddingPlacesWhatWasGatheredThenFillsSilence() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        _ = timeline.place(buffer(at: 0))
        let padded = timeline.pad(through: origin + MediaTime(seconds: 1))
        #expect(padded.count == 48_000 * 2)
        #expect(padded.prefix(480 * 2).allSatisfy { $0 == 1 })
        #expect(timeline.pad(through: origin + MediaTime(seconds: 0.5)).isEmpty)
    }
}
