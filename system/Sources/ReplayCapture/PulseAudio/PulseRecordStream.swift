import CPulse
import ReplaySystem

/// A PulseAudio record stream through the asynchronous API on its own threaded main loop.
///
/// Each read says what had arrived when it returned and the source's own latency (the
/// server's timing information), which `SourceClock` turns into capture times; and the date
/// the server's interpolated latency gives, which is right for a monitor of a sink that
/// plays as it renders (its data is "from the future": heard only after the sink's latency,
/// which the simple API reports as zero) but wrong for a source that delivers in blocks:
/// between two timing updates the server's write index is stale, the latency runs negative,
/// and a 2 s block was dated up to 2 s after it arrived.
final class PulseRecordStream {
    let sampleRate: Int
    let channels: Int
    /// The connection; torn down after the stream, as it is released after `deinit`.
    private let server: PulseServer
    private var mainloop: OpaquePointer { server.mainloop }
    private var context: OpaquePointer { server.context }
    private var stream: OpaquePointer?
    /// Bytes of the current peeked fragment already handed out.
    private var fragmentOffset = 0
    /// Set by the server's overflow notice: data was lost that no count shows.
    private var overflowed = false
    /// Wakes `waitForData` when the source has kept quiet too long; made on first use.
    private var quietTimer: OpaquePointer?
    /// Set by `quietTimer` when it fires.
    private var quietTimerFired = false

    /// `device` nil means the default source; "@DEFAULT_MONITOR@" is what the default sink plays.
    /// With `application`, only that application's playback is recorded (wherever it plays).
    init(device: String?, application: String? = nil, streamName: String, sampleRate: Int, channels: Int,
         periodFrames: Int) throws(CaptureError) {
        self.sampleRate = sampleRate
        self.channels = channels
        server = try PulseServer()
        let (mainloop, context) = (server.mainloop, server.context)
        let loop = UnsafeMutableRawPointer(mainloop)
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }

        // pipewire-pulse (0.3.65, Debian 12's) takes "@DEFAULT_MONITOR@" for the default
        // *source*: "app audio" recorded the microphone. The default sink's monitor is named
        // outright, as every server understands it.
        var device = device == Self.defaultMonitor ? server.defaultSinkMonitor() ?? device : device
        // One application: its playback stream (a sink input) through its sink's monitor.
        var onlyStream: UInt32?
        if let application {
            let playing = server.playbackStreams()
            guard let found = playing.first(where: { $0.names.contains { $0.lowercased() == application.lowercased() } }),
                  let sink = server.sinkName(index: found.sink) else {
                let names = Set(playing.compactMap(\.names.first)).sorted()
                throw CaptureError(.audioUnavailable, "no application named '\(application)' is playing sound now"
                    + (names.isEmpty ? "" : " (playing: \(names.joined(separator: ", ")))"))
            }
            device = "\(sink).monitor"
            onlyStream = found.index
        }
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(sampleRate), channels: UInt8(channels))
        guard let stream = pa_stream_new(context, streamName, &spec, nil) else {
            throw CaptureError(.audioUnavailable, "cannot create an audio stream (\(server.errorText))")
        }
        self.stream = stream
        if let onlyStream { pa_stream_set_monitor_stream(stream, onlyStream) }
        pa_stream_set_state_callback(stream, { _, userdata in pa_threaded_mainloop_signal(OpaquePointer(userdata), 0) }, loop)
        pa_stream_set_read_callback(stream, { _, _, userdata in pa_threaded_mainloop_signal(OpaquePointer(userdata), 0) }, loop)
        pa_stream_set_overflow_callback(stream, { _, userdata in
            guard let userdata else { return }
            Unmanaged<PulseRecordStream>.fromOpaque(userdata).takeUnretainedValue().overflowed = true
        }, Unmanaged.passUnretained(self).toOpaque())
        // Small fragments keep each buffer's date close to its capture.
        let fragment = UInt32(periodFrames * channels * MemoryLayout<Float>.size)
        var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max,
                                        minreq: UInt32.max, fragsize: fragment)
        let flags = pa_stream_flags_t(PA_STREAM_INTERPOLATE_TIMING.rawValue | PA_STREAM_AUTO_TIMING_UPDATE.rawValue)
        guard pa_stream_connect_record(stream, device, &attributes, flags) >= 0 else {
            throw CaptureError(.audioUnavailable, "cannot record from \(device ?? "the default source") (\(server.errorText))")
        }
        while true {
            let state = pa_stream_get_state(stream)
            if state == PA_STREAM_READY { break }
            if PA_STREAM_IS_GOOD(state) == 0 {
                throw CaptureError(.audioUnavailable, "cannot record from \(device ?? "the default source") (\(server.errorText))")
            }
            pa_threaded_mainloop_wait(mainloop)
        }
    }

    /// What the default sink plays, as a device name.
    static let defaultMonitor = "@DEFAULT_MONITOR@"

    deinit {
        pa_threaded_mainloop_lock(mainloop)
        if let quietTimer, let free = pa_threaded_mainloop_get_api(mainloop).pointee.time_free { free(quietTimer) }
        if let stream {
            pa_stream_set_read_callback(stream, nil, nil)
            pa_stream_set_overflow_callback(stream, nil, nil)
            pa_stream_set_state_callback(stream, nil, nil)
            pa_stream_disconnect(stream)
            pa_stream_unref(stream)
        }
        pa_threaded_mainloop_unlock(mainloop)
    }

    /// What one read saw as it returned.
    struct Arrival {
        /// When, on the monotonic clock.
        var time: Int64
        /// Frames that had arrived beyond those read: the stream's data waiting in the client.
        var framesWaiting: Int
        /// The source's own latency, from the server's timing information (0 until the first update).
        var sourceLatency: Int64
        /// The server said data was lost since the last read (the stream overflowed).
        var overflowed: Bool
        /// When the server's interpolated latency says the first sample was captured (for a
        /// monitor: when the sink plays it); nil before its first timing update.
        var serverStamp: Int64?
    }

    /// Waits until `frames` frames can be read at once, at most `timeout` nanoseconds; false
    /// when the source kept quiet that long (a source that delivers blocks has finished one).
    func waitForData(frames: Int, timeout: Int64) throws(CaptureError) -> Bool {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        let wanted = frames * channels * MemoryLayout<Float>.size
        quietTimerFired = false
        var armed = false
        defer { if armed, let quietTimer { pa_context_rttime_restart(context, quietTimer, UInt64.max) } }
        while true {
            guard let stream, PA_STREAM_IS_GOOD(pa_stream_get_state(stream)) != 0,
                  PA_CONTEXT_IS_GOOD(pa_context_get_state(context)) != 0 else {
                throw CaptureError(.audioFailed, "audio capture failed: the audio server went away")
            }
            // The readable size counts the fragment being read whole.
            if pa_stream_readable_size(stream) - fragmentOffset >= wanted { return true }
            if quietTimerFired { return false }
            if !armed {
                let due = pa_rtclock_now() + UInt64(max(0, timeout) / 1000)
                if let quietTimer {
                    pa_context_rttime_restart(context, quietTimer, due)
                } else {
                    quietTimer = pa_context_rttime_new(context, due, { _, _, _, userdata in
                        guard let userdata else { return }
                        let stream = Unmanaged<PulseRecordStream>.fromOpaque(userdata).takeUnretainedValue()
                        stream.quietTimerFired = true
                        pa_threaded_mainloop_signal(stream.mainloop, 0)
                    }, Unmanaged.passUnretained(self).toOpaque())
                }
                armed = true
            }
            pa_threaded_mainloop_wait(mainloop)
        }
    }

    /// Fills `samples` (interleaved) completely, and says what had arrived by then.
    func read(into samples: inout [Float]) throws(CaptureError) -> Arrival {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        let wanted = samples.count * MemoryLayout<Float>.size
        var filled = 0
        var serverStamp: Int64?
        while filled < wanted {
            guard let stream, PA_STREAM_IS_GOOD(pa_stream_get_state(stream)) != 0,
                  PA_CONTEXT_IS_GOOD(pa_context_get_state(context)) != 0 else {
                throw CaptureError(.audioFailed, "audio capture failed: the audio server went away")
            }
            var data: UnsafeRawPointer?
            var length = 0
            guard pa_stream_peek(stream, &data, &length) >= 0 else {
                throw CaptureError(.audioFailed, "audio capture failed (\(server.errorText))")
            }
            if length == 0 {
                pa_threaded_mainloop_wait(mainloop)
                continue
            }
            if filled == 0 {
                // The latency dates the sample at the read index: the next byte of this fragment.
                var microseconds: pa_usec_t = 0
                var negative: Int32 = 0
                if pa_stream_get_latency(stream, &microseconds, &negative) >= 0 {
                    let offset = Int64(fragmentOffset / (channels * MemoryLayout<Float>.size)) * 1_000_000_000 / Int64(sampleRate)
                    let latency = Int64(microseconds) * 1000
                    serverStamp = MonotonicClock.nanoseconds() - (negative != 0 ? -latency : latency) + offset
                }
            }
            let count = min(length - fragmentOffset, wanted - filled)
            samples.withUnsafeMutableBytes { raw in
                // Not empty: `filled` < `wanted`, its size.
                guard let base = raw.baseAddress else { return }
                if let data {
                    base.advanced(by: filled).copyMemory(from: data.advanced(by: fragmentOffset), byteCount: count)
                } else {
                    // A hole in the stream: the server lost data; it is silence to us.
                    base.advanced(by: filled).initializeMemory(as: UInt8.self, repeating: 0, count: count)
                }
            }
            filled += count
            fragmentOffset += count
            if fragmentOffset == length {
                pa_stream_drop(stream)
                fragmentOffset = 0
            }
        }
        let frameBytes = channels * MemoryLayout<Float>.size
        // What the client holds counts the fragment being read whole (it is dropped only when done).
        let waiting = max(0, pa_stream_readable_size(stream) - fragmentOffset)
        let sourceLatency = pa_stream_get_timing_info(stream).map { Int64(clamping: $0.pointee.source_usec) * 1000 } ?? 0
        defer { overflowed = false }
        return Arrival(time: MonotonicClock.nanoseconds(), framesWaiting: waiting / frameBytes, sourceLatency: sourceLatency,
                       overflowed: overflowed, serverStamp: serverStamp)
    }
}
