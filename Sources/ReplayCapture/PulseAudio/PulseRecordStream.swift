import CPulse

/// A PulseAudio record stream through the simple API: blocking reads of 32-bit float
/// frames, and the stream's latency to date them.
final class PulseRecordStream {
    private let stream: OpaquePointer
    let sampleRate: Int
    let channels: Int

    /// `device` nil means the default source; "@DEFAULT_MONITOR@" is what the default sink plays.
    init(device: String?, streamName: String, sampleRate: Int, channels: Int, periodFrames: Int) throws(CaptureError) {
        self.sampleRate = sampleRate
        self.channels = channels
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(sampleRate), channels: UInt8(channels))
        let periodBytes = UInt32(periodFrames * channels * MemoryLayout<Float>.size)
        // Small fragments: each read returns soon after its audio was captured, which keeps stamps tight.
        var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max,
                                        minreq: UInt32.max, fragsize: periodBytes)
        var error: Int32 = 0
        guard let stream = pa_simple_new(nil, "OpenReplayKit replayd", PA_STREAM_RECORD, device, streamName,
                                         &spec, nil, &attributes, &error) else {
            throw CaptureError(.audioUnavailable, "no audio server (\(String(cString: pa_strerror(error))))")
        }
        self.stream = stream
    }

    deinit { pa_simple_free(stream) }

    /// Fills `samples` (interleaved) completely.
    func read(into samples: inout [Float]) throws(CaptureError) {
        var error: Int32 = 0
        let status = samples.withUnsafeMutableBytes { raw in
            pa_simple_read(stream, raw.baseAddress, raw.count, &error)
        }
        if status < 0 {
            throw CaptureError(.audioFailed, "audio capture failed: \(String(cString: pa_strerror(error)))")
        }
    }

    /// How long ago the next sample to be read was captured, in nanoseconds.
    func latency() -> Int64 {
        var error: Int32 = 0
        let microseconds = pa_simple_get_latency(stream, &error)
        return microseconds == UInt64.max ? 0 : Int64(microseconds) * 1000
    }
}
