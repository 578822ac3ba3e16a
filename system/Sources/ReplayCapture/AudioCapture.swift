public import ReplayMedia
public import ReplaySystem
import ReplayProcessing

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
        switch source {
        case .microphone: try runCapturing(output: output, stop: stop)
        case .app: try runMonitoring(output: output, stop: stop)
        }
    }

    /// What the computer plays, through the output's monitor: dated by the server's
    /// interpolated latency, when the sink plays it (a little after it was rendered and
    /// reached us), which keeps app audio on the pictures it goes with.
    /// (A sink that renders in large blocks is not handled here yet: issue 29 left it.)
    private func runMonitoring(output: any CaptureOutput, stop: StopFlag) throws(CaptureError) {
        var samples = [Float](repeating: 0, count: Self.readFrames * Self.channels)
        let duration = MediaTime.samples(Int64(Self.readFrames), rate: Self.sampleRate).nanoseconds
        while !stop.isRaised {
            let arrival = try stream.read(into: &samples)
            // Until the server's timing arrives, date the buffer by the read: it just ended.
            let first = arrival.serverStamp ?? arrival.time - duration
            output.append(AudioBuffer(source: source, time: MediaTime(nanoseconds: first), sampleRate: Self.sampleRate,
                                      channels: Self.channels, samples: samples))
        }
    }

    /// A microphone: captured sound can never be from the future, whatever rhythm the source
    /// delivers it in (10 ms reads, or 2 s blocks that the server's latency misdated).
    private func runCapturing(output: any CaptureOutput, stop: StopFlag) throws(CaptureError) {
        var samples = [Float](repeating: 0, count: Self.readFrames * Self.channels)
        // Dated by the source's own clock, placed by what arrived when (SourceClock): never
        // after it arrived, whether the source delivers 10 ms at a time or 2 s blocks.
        var clock = SourceClock(sampleRate: Self.sampleRate)
        // Reads wait here until the source pauses (see `quietBeforeFlush`): a block reaches us
        // in pieces a fraction of a millisecond apart, and only once all of it is in does the
        // clock know how old its start is.
        var pending: [(position: Int64, samples: [Float])] = []
        var pendingSince: Int64 = 0
        var position: Int64 = 0
        func flush() {
            for read in pending {
                // Every pending read was observed, so the clock has a placement.
                guard let time = clock.time(ofFrame: read.position) else { continue }
                output.append(AudioBuffer(source: source, time: time, sampleRate: Self.sampleRate, channels: Self.channels,
                                          samples: read.samples))
            }
            pending.removeAll(keepingCapacity: true)
        }
        defer { flush() }
        while !stop.isRaised {
            // The source paused: what came before is all in, and goes out now, not when the
            // next block comes (2 s later for a 2 s block).
            if !pending.isEmpty {
                let quiet = Self.quietBeforeFlush(pendingFrames: pending.count * Self.readFrames,
                                                  pendingFor: MonotonicClock.nanoseconds() - pendingSince)
                if try !stream.waitForData(frames: Self.readFrames, timeout: quiet) { flush() }
            }
            let arrival = try stream.read(into: &samples)
            if arrival.overflowed {
                flush()
                clock.restart()
            }
            clock.observe(arrival: MediaTime(nanoseconds: arrival.time),
                          framesReceived: position + Int64(Self.readFrames + arrival.framesWaiting),
                          sourceLatency: MediaTime(nanoseconds: arrival.sourceLatency))
            if pending.isEmpty { pendingSince = arrival.time }
            pending.append((position, samples))
            position += Int64(Self.readFrames)
            // A source that never pauses (we are behind it) still gets out, 4 s at a time.
            if pending.count * Self.readFrames >= 4 * Self.sampleRate { flush() }
        }
    }

    /// How long the source must keep quiet before the reads held so far go out. A steady
    /// source pauses about a read's length between reads: half a read's quiet (5 ms) holds its
    /// sound back by half a read. Sound that came faster than it plays (more held than twice
    /// the time it took to arrive, and 20 ms) is a block being handed over, whose delivery can
    /// stall for a few milliseconds on a busy machine: a flush then would date the block by
    /// part of it, seconds late (seen once: 0.87 s), so it waits for 100 ms of quiet.
    static func quietBeforeFlush(pendingFrames: Int, pendingFor nanoseconds: Int64) -> Int64 {
        let held = MediaTime.samples(Int64(pendingFrames), rate: sampleRate).nanoseconds
        let halfRead = MediaTime.samples(Int64(readFrames), rate: sampleRate).nanoseconds / 2
        return held > 2 * max(0, nanoseconds) + 20_000_000 ? 100_000_000 : halfRead
    }
}
