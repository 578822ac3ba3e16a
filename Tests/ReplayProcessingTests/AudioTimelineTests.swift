import ReplayMedia
import ReplayProcessing
import Testing

@Suite struct AudioTimelineTests {
    let origin = MediaTime(seconds: 100)

    func buffer(at seconds: Double, frames: Int = 480, value: Float = 1) -> AudioBuffer {
        AudioBuffer(source: .app, time: origin + MediaTime(seconds: seconds), sampleRate: 48_000, channels: 2,
                    samples: [Float](repeating: value, count: frames * 2))
    }

    @Test func audioThatStartsLateIsLedBySilence() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        let placed = timeline.place(buffer(at: 0.1))
        #expect(placed.count == (4800 + 480) * 2)
        #expect(placed.prefix(4800 * 2).allSatisfy { $0 == 0 })
        #expect(placed.suffix(480 * 2).allSatisfy { $0 == 1 })
        #expect(timeline.insertedFrames == 4800)
    }

    @Test func audioFromBeforeTheOriginIsDropped() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        let placed = timeline.place(buffer(at: -0.005))
        #expect(placed.count == 240 * 2)
        #expect(timeline.droppedFrames == 240)
    }

    @Test func jitteryStampsOfContinuousAudioAreNotObeyed() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        var total = 0
        for index in 0..<500 {
            // ±4 ms of jitter around the true time of each 10 ms buffer.
            let jitter = Double((index * 7919) % 9 - 4) / 1000
            total += timeline.place(buffer(at: Double(index) * 0.01 + (index == 0 ? 0 : jitter))).count
        }
        #expect(total == 500 * 480 * 2)
        #expect(timeline.insertedFrames == 0 && timeline.droppedFrames == 0)
    }

    @Test func aClockThatRunsFastIsCorrectedWithinTheTolerance() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        // The stamps say 1% more time passes than the samples cover: silence must be inserted.
        for index in 0..<1000 {
            _ = timeline.place(buffer(at: Double(index) * 0.0101))
            let expected = Double(index) * 0.0101 * 48_000
            #expect(abs(Double(timeline.nextIndex - 480) - expected) < 0.02 * 48_000)
        }
        #expect(timeline.insertedFrames > 0)
    }

    @Test func aGapInCaptureIsFilledWithSilenceAtOnce() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        _ = timeline.place(buffer(at: 0))
        let placed = timeline.place(buffer(at: 0.51))
        #expect(placed.count == (24_000 + 480) * 2)
        #expect(timeline.nextIndex == 24_480 + 480)
    }

    @Test func paddingFillsSilenceUpToAGivenTime() {
        var timeline = AudioTimeline(origin: origin, sampleRate: 48_000, channels: 2)
        _ = timeline.place(buffer(at: 0))
        #expect(timeline.pad(through: origin + MediaTime(seconds: 1)).count == (48_000 - 480) * 2)
        #expect(timeline.pad(through: origin + MediaTime(seconds: 0.5)).isEmpty)
    }
}
