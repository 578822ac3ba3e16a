public import ReplayMedia

/// One captured audio source as ReplayKit hands it to an upload extension: periods of
/// exactly `periodFrames` (1024), each stamped where the one before ended, on one gap-free
/// timeline from `origin`.
///
/// Capture reads arrive in whatever rhythm the audio server and its device keep (10 ms
/// reads, bursts, a device whose clock runs a little fast or slow, one that stalls), with
/// stamps that jitter by milliseconds. `AudioTimeline` lays them on the monotonic clock
/// (silence for a stall, dropped samples for a clock running ahead) and `PeriodSplitter`
/// cuts that contiguous stream into periods, so every source shares one grid from `origin`
/// and its duration follows the video's clock.
public struct SteadyAudioTrack: Sendable {
    private var timeline: AudioTimeline
    private var splitter: PeriodSplitter
    /// Where period 0 starts, on the monotonic clock (a broadcast's start).
    public let origin: MediaTime

    /// A track from `origin` of `channels`-channel, `sampleRate` Hz periods of `periodFrames`;
    /// its buffers must already be at that rate and channel count.
    public init(origin: MediaTime, sampleRate: Int = 48_000, channels: Int = 2, periodFrames: Int = 1024) {
        self.origin = origin
        timeline = AudioTimeline(origin: origin, sampleRate: sampleRate, channels: channels)
        splitter = PeriodSplitter(sampleRate: sampleRate, periodFrames: periodFrames, origin: origin)
    }

    /// Silence inserted and samples dropped to keep the track on the clock, for diagnostics.
    public var corrections: (insertedFrames: Int64, droppedFrames: Int64) { (timeline.insertedFrames, timeline.droppedFrames) }

    /// The periods `buffer` completes, oldest first (none while the start is being placed).
    public mutating func append(_ buffer: AudioBuffer) -> [AudioBuffer] {
        // What the timeline returns always begins at its write position before the call.
        let start = timeline.nextIndex
        let samples = timeline.place(buffer)
        guard !samples.isEmpty else { return [] }
        return splitter.append(AudioBuffer(source: buffer.source, time: origin + MediaTime.samples(start, rate: buffer.sampleRate),
                                           sampleRate: buffer.sampleRate, channels: buffer.channels, samples: samples))
    }
}
