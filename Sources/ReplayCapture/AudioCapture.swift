public import ReplayMedia
public import ReplaySystem

/// Captures one audio source from PulseAudio (which PipeWire systems also serve) as
/// 48 kHz stereo float buffers, dated on the monotonic clock shared with video.
public final class AudioCapture: AudioCapturing {
    public static let sampleRate = 48_000
    public static let channels = 2
    /// 10 ms reads: short enough to date each buffer within a few milliseconds.
    static let readFrames = 480

    private let stream: PulseRecordStream
    public let source: AudioSource

    /// Opens the stream; throws `audioUnavailable` when no audio server answers.
    public init(source: AudioSource) throws(CaptureError) {
        self.source = source
        stream = try PulseRecordStream(
            device: source == .app ? PulseRecordStream.defaultMonitor : nil,
            streamName: source == .app ? "app audio" : "microphone",
            sampleRate: Self.sampleRate, channels: Self.channels, periodFrames: Self.readFrames)
    }

    public func run(output: any CaptureOutput, stop: StopFlag) throws(CaptureError) {
        var samples = [Float](repeating: 0, count: Self.readFrames * Self.channels)
        let duration = MediaTime.samples(Int64(Self.readFrames), rate: Self.sampleRate).nanoseconds
        while !stop.isRaised {
            // Until the server's timing arrives, date the buffer by the read: it just ended.
            let first = try stream.read(into: &samples) ?? MonotonicClock.nanoseconds() - duration
            output.append(AudioBuffer(
                source: source, time: MediaTime(nanoseconds: first),
                sampleRate: Self.sampleRate, channels: Self.channels, samples: samples))
        }
    }
}
