import CFFmpeg
import ReplaySystem
import Synchronization

/// Where a live stream goes and in which container: FLV over RTMP, MPEG-TS over SRT, or HLS
/// segments and a playlist written by FFmpeg's muxer.
public struct IngestTarget: Sendable, Equatable {
    /// FFmpeg's muxer name: "flv", "mpegts", "hls".
    public var muxer: String
    /// What FFmpeg opens (may hold a secret, e.g. an RTMP stream key).
    public var url: String
    /// The same place with its secret removed, for messages and logs.
    public var displayURL: String
    /// Muxer and protocol options.
    public var options: [String: String]

    public init(muxer: String, url: String, displayURL: String? = nil, options: [String: String] = [:]) {
        self.muxer = muxer
        self.url = url
        self.displayURL = displayURL ?? url
        self.options = options
    }
}

/// One open connection to an ingest server (or one HLS output), with the stream's header
/// written. Every blocking step gives up after `timeout` seconds or when `cancel()` is
/// called, so a server that went away can never hang the uploader.
public final class IngestConnection: @unchecked Sendable {
    // @unchecked: used by one uploader thread; only `cancel()` and the interrupt check,
    // which touch the atomics, run elsewhere.
    public let target: IngestTarget
    private var container: UnsafeMutablePointer<AVFormatContext>?
    private var timeBases: [EncodedPacket.Track: (codec: AVRational, index: Int32)] = [:]
    private let interrupt = InterruptState()
    private let timeoutNanoseconds: Int64
    private var headerWritten = false

    public init(target: IngestTarget, encoder: LiveEncoder, timeout: Double = 5) throws(CodecError) {
        self.target = target
        timeoutNanoseconds = Int64(timeout * 1e9)
        var context: UnsafeMutablePointer<AVFormatContext>?
        var status = avformat_alloc_output_context2(&context, nil, target.muxer, target.url)
        guard status >= 0, let context else {
            throw CodecError(.muxerFailed, "cannot create the \(target.muxer) muxer", status: status)
        }
        container = context
        try addStream(.video, from: encoder.video.context)
        try addStream(.audio, from: encoder.audio.context)

        let opaque = Unmanaged.passUnretained(interrupt).toOpaque()
        context.pointee.interrupt_callback = AVIOInterruptCB(
            callback: { opaque in
                guard let opaque else { return 0 }
                return Unmanaged<InterruptState>.fromOpaque(opaque).takeUnretainedValue().shouldStop ? 1 : 0
            },
            opaque: opaque)
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        for (key, value) in target.options { av_dict_set(&options, key, value, 0) }
        interrupt.arm(timeoutNanoseconds)
        defer { interrupt.disarm() }
        if context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            status = avio_open2(&context.pointee.pb, target.url, AVIO_FLAG_WRITE, &context.pointee.interrupt_callback, &options)
            guard status >= 0 else { throw CodecError(.muxerFailed, "cannot connect to \(target.displayURL)", status: status) }
        }
        status = avformat_write_header(context, &options)
        guard status >= 0 else { throw CodecError(.muxerFailed, "\(target.displayURL) refused the stream", status: status) }
        headerWritten = true
    }

    deinit { release() }

    /// Sends one packet (FFmpeg may hold it briefly to interleave audio and video).
    public func write(_ packet: EncodedPacket) throws(CodecError) {
        guard let container, let (codecBase, index) = timeBases[packet.track], let stream = container.pointee.streams[Int(index)] else {
            throw CodecError(.muxerFailed, "the connection to \(target.displayURL) is closed")
        }
        guard let copy = av_packet_clone(packet.packet) else { throw CodecError(.muxerFailed, "out of memory") }
        var owned: UnsafeMutablePointer<AVPacket>? = copy
        defer { av_packet_free(&owned) }
        av_packet_rescale_ts(copy, codecBase, stream.pointee.time_base)
        copy.pointee.stream_index = index
        interrupt.arm(timeoutNanoseconds)
        defer { interrupt.disarm() }
        let status = av_interleaved_write_frame(container, copy)
        guard status >= 0 else { throw CodecError(.writeFailed, "lost \(target.displayURL)", status: status) }
    }

    /// Ends the stream properly (trailer, playlist end) and closes the connection.
    public func finish() throws(CodecError) {
        guard let container, headerWritten else { return }
        interrupt.arm(timeoutNanoseconds)
        let status = av_write_trailer(container)
        interrupt.disarm()
        headerWritten = false
        release()
        guard status >= 0 else { throw CodecError(.writeFailed, "could not end the stream at \(target.displayURL)", status: status) }
    }

    /// Makes whatever FFmpeg is blocked in give up now (from any thread).
    public func cancel() { interrupt.cancel() }

    private func release() {
        guard let container else { return }
        if container.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0, container.pointee.pb != nil {
            interrupt.cancel()  // a dead server must not hold up closing
            avio_closep(&container.pointee.pb)
        }
        avformat_free_context(container)
        self.container = nil
    }

    private func addStream(_ track: EncodedPacket.Track, from codec: UnsafeMutablePointer<AVCodecContext>) throws(CodecError) {
        guard let stream = avformat_new_stream(container, nil) else { throw CodecError(.muxerFailed, "out of memory") }
        let status = avcodec_parameters_from_context(stream.pointee.codecpar, codec)
        guard status >= 0 else { throw CodecError(.muxerFailed, "cannot describe a stream", status: status) }
        stream.pointee.time_base = codec.pointee.time_base
        timeBases[track] = (codec.pointee.time_base, stream.pointee.index)
    }
}

/// What FFmpeg's interrupt callback asks: has the current step's deadline passed, or was
/// the connection cancelled?
private final class InterruptState: Sendable {
    private let deadline = Atomic<Int64>(.max)
    private let cancelled = Atomic<Bool>(false)

    func arm(_ nanoseconds: Int64) { deadline.store(MonotonicClock.nanoseconds() + nanoseconds, ordering: .relaxed) }
    func disarm() { deadline.store(.max, ordering: .relaxed) }
    func cancel() { cancelled.store(true, ordering: .relaxed) }
    var shouldStop: Bool {
        cancelled.load(ordering: .relaxed) || MonotonicClock.nanoseconds() > deadline.load(ordering: .relaxed)
    }
}
