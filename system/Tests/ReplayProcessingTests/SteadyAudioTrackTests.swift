import ReplayMedia
import ReplayProcessing
import Testing

/// A source's reads become ReplayKit's steady periods, whatever the source's rhythm.
@Suite struct SteadyAudioTrackTests {
    /// 10 ms reads of 480 frames stamped at `times` (seconds).
    private func feed(_ track: inout SteadyAudioTrack, times: [Double]) -> [AudioBuffer] {
        times.flatMap { time in
            track.append(AudioBuffer(source: .microphone, time: MediaTime(seconds: time), sampleRate: 48_000, channels: 2,
                                     samples: [Float](repeating: 0.5, count: 960)))
        }
    }

    /// Every period is 1024 frames and starts where the one before ended, to the nanosecond.
    private func expectSteady(_ periods: [AudioBuffer], from origin: MediaTime, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(periods.allSatisfy { $0.frameCount == 1024 }, sourceLocation: sourceLocation)
        for (index, period) in periods.enumerated() {
            #expect(period.time == origin + MediaTime.samples(Int64(index * 1024), rate: 48_000), "period \(index)",
                    sourceLocation: sourceLocation)
        }
    }

    @Test func jitteryReadsBecomeContiguousPeriodsFromTheOrigin() {
        let origin = MediaTime(seconds: 100)
        var track = SteadyAudioTrack(origin: origin)
        // Stamps jitter by ±3 ms around the true 10 ms rhythm.
        let times = (0..<300).map { 100.0 + Double($0) / 100 + [0.003, -0.002, 0.001, -0.003][$0 % 4] }
        let periods = feed(&track, times: times)
        expectSteady(periods, from: origin)
        #expect(periods.count == 300 * 480 / 1024)
        // Only the start is placed (by the median stamp, within the jitter); nothing after it.
        #expect(track.corrections.insertedFrames <= 3 * 48 && track.corrections.droppedFrames == 0, "\(track.corrections)")
    }

    @Test func aStallIsFilledWithSilenceSoTheTrackKeepsTime() {
        let origin = MediaTime(seconds: 0)
        var track = SteadyAudioTrack(origin: origin)
        // 1 s of reads, then nothing for 600 ms (the source delivered nothing), then 1 s more.
        let times = (0..<100).map { Double($0) / 100 } + (0..<100).map { 1.6 + Double($0) / 100 }
        let periods = feed(&track, times: times)
        expectSteady(periods, from: origin)
        // 2.6 s of track for 2.6 s of clock: the 600 ms stall is silence, not lost time.
        #expect(abs(Double(periods.count * 1024) / 48_000 - 2.6) < 1024.0 / 48_000)
        #expect(abs(track.corrections.insertedFrames - 28_800) < 480)
        let silent = periods.filter { $0.samples.allSatisfy { $0 == 0 } }.count
        #expect(silent >= 26 && silent <= 28, "\(silent) silent periods")
    }

    @Test func aSourceWhoseClockRunsFastIsTrimmedToTheClock() {
        let origin = MediaTime(seconds: 0)
        var track = SteadyAudioTrack(origin: origin)
        // 11 s of samples delivered over 10 s of clock: reads come 9.09 ms apart.
        let times = (0..<1100).map { Double($0) * 10 / 1100 }
        let periods = feed(&track, times: times)
        expectSteady(periods, from: origin)
        #expect(abs(Double(periods.count * 1024) / 48_000 - 10) < 0.02, "\(Double(periods.count * 1024) / 48_000) s")
        #expect(track.corrections.droppedFrames > 40_000)
    }
}
