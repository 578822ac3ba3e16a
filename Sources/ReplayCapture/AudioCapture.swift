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

    /// Opens the stream; throws `audioUnavailable` when no audio server answers, or the
    /// device or application `selection` names is not there.
    public init(source: AudioSource, selection: AudioSelection = AudioSelection()) throws(CaptureError) {
        self.source = source
        let device: String? = switch (source, selection.device) {
        // An output is recorded through its monitor.
        case (.app, let sink?): sink.hasSuffix(".monitor") ? sink : "\(sink).monitor"
        case (.app, nil): PulseRecordStream.defaultMonitor
        case (.microphone, let input): input
        }
        stream = try PulseRecordStream(
            device: device, application: source == .app ? selection.application : nil,
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
