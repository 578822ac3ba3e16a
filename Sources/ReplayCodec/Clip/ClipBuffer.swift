import CFFmpeg
public import ReplayMedia
import Synchronization

/// One encoded packet in a clip buffer, with the movie track it belongs to.
struct ClipPacket: RingPacket {
    let packet: EncodedPacket
    /// 0 the video; 1… the audio tracks in the format's order.
    let stream: Int
    var time: MediaTime { packet.time }
    var byteCount: Int { packet.byteCount }
    var startsClip: Bool { stream == 0 && packet.isKeyframe }
}

/// What a save wrote.
public struct SavedClip: Sendable, Equatable {
    /// From its first picture (a keyframe) to its last packet.
    public let duration: MediaTime
    public let videoFrames: Int
    public let bytes: Int64
    /// The first picture is a keyframe (always, as the ring starts at one; kept for the record).
    public let startsOnKeyframe: Bool
}

/// A movie that is never written, only kept: the last minutes of encoded video and audio in
/// a `PacketRing`, from which a clip is saved as a fragmented MP4 whenever asked, while
/// encoding goes on. A keyframe comes at least once a second, so a clip starts within a
/// second of what was asked. As a `MovieSink` it takes a recording session's samples as a
/// movie file would.
public final class ClipBuffer: MovieSink, @unchecked Sendable {
    // @unchecked: the encoders are used by the session's writer thread only; the ring is
    // behind a mutex, which `save` takes just long enough to copy the packets' references.
    public let format: MovieFormat
    private let video: VideoEncoder
    private let audio: [(source: AudioSource, encoder: AudioEncoder)]
    private let ring: Mutex<PacketRing<ClipPacket>>
    private var lastKeyframe: MediaTime?
    public private(set) var videoFrames = 0

    /// Keeps up to `length` and up to `byteBudget` bytes of encoded packets.
    public init(format: MovieFormat, length: MediaTime, byteBudget: Int) throws(CodecError) {
        av_log_set_level(AV_LOG_ERROR)
        self.format = format
        video = try VideoEncoder(codec: format.codec, width: format.width, height: format.height, pictureFormat: format.picture,
                                 fps: format.fps, preset: format.preset, bitRate: format.bitRate, crf: format.crf,
                                 quality: format.quality, keyframeInterval: format.fps, frameRateMode: format.frameRateMode)
        audio = try format.audioSources.map { source throws(CodecError) in
            (source, try AudioEncoder(sampleRate: format.sampleRate, channels: format.channels))
        }
        ring = Mutex(PacketRing(maxDuration: length, maxBytes: byteBudget))
    }

    /// What the ring holds now: its payload bytes.
    public var bytesWritten: Int64 { Int64(ring.withLock { $0.bytes }) }
    /// How far back a save can reach now.
    public var bufferedDuration: MediaTime { ring.withLock { $0.span } }

    public func append(_ sample: VideoSample, at time: MediaTime) throws(CodecError) {
        // A still screen sends few pictures: a keyframe is asked for once a second of movie time.
        if lastKeyframe.map({ time - $0 >= MediaTime(nanoseconds: 1_000_000_000) }) ?? true {
            video.keyframeRequested = true
            lastKeyframe = time
        }
        try video.encode(sample.pixels, pts: video.pts(time)) { packet throws(CodecError) in try keep(packet, stream: 0, from: video.context) }
        videoFrames += 1
    }

    public func append(audio samples: [Float], source: AudioSource) throws(CodecError) {
        guard let index = audio.firstIndex(where: { $0.source == source }) else { return }
        let encoder = audio[index].encoder
        try encoder.encode(samples) { packet throws(CodecError) in try keep(packet, stream: index + 1, from: encoder.context) }
    }

    /// Flushes what the encoders still hold into the ring, where it can still be saved.
    public func finish() throws(CodecError) {
        try video.finish { packet throws(CodecError) in try keep(packet, stream: 0, from: video.context) }
        for (index, track) in audio.enumerated() {
            try track.encoder.finish { packet throws(CodecError) in try keep(packet, stream: index + 1, from: track.encoder.context) }
        }
    }

    public func abandon() {}

    private func keep(_ packet: UnsafeMutablePointer<AVPacket>, stream: Int, from codec: UnsafeMutablePointer<AVCodecContext>)
        throws(CodecError) {
        let kept = ClipPacket(packet: try EncodedPacket(referencing: packet, track: stream == 0 ? .video : .audio,
                                                        timeBase: codec.pointee.time_base), stream: stream)
        ring.withLock { $0.append(kept) }
    }

    /// Writes the last `duration` (nil: all that is kept) into a new fragmented MP4 at
    /// `path`, starting on a keyframe, timed from zero. Encoding goes on meanwhile: only the
    /// copy of the packets' references holds the ring up. Throws when nothing is kept yet.
    public func save(last duration: MediaTime?, to path: String) throws(CodecError) -> SavedClip {
        let packets = ring.withLock { $0.last(duration) }
        guard let first = packets.first, first.startsClip else {
            throw CodecError(.muxerFailed, "nothing is buffered yet")
        }
        let sink: FileSink
        do { sink = try FileSink(path: path) } catch { throw CodecError(.writeFailed, "cannot create the clip's file: \(error)") }
        var container: UnsafeMutablePointer<AVFormatContext>?
        var status = avformat_alloc_output_context2(&container, nil, "mp4", nil)
        guard status >= 0, let container else { throw CodecError(.muxerFailed, "cannot create the MP4 muxer", status: status) }
        defer { avformat_free_context(container) }
        container.pointee.pb = sink.context
        container.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        let codecs = [video.context] + audio.map(\.encoder.context)
        for (index, codec) in codecs.enumerated() {
            guard let stream = avformat_new_stream(container, nil) else { throw CodecError(.muxerFailed, "out of memory") }
            status = avcodec_parameters_from_context(stream.pointee.codecpar, codec)
            guard status >= 0 else { throw CodecError(.muxerFailed, "cannot describe a track", status: status) }
            stream.pointee.time_base = codec.pointee.time_base
            // The clip does not begin with the encoder's first packet: no priming to skip (the
            // packets' times are moved by it instead, below).
            stream.pointee.codecpar.pointee.initial_padding = 0
            if index > 0 {
                av_dict_set(&stream.pointee.metadata, "handler_name", audio[index - 1].source == .app ? "app audio" : "microphone", 0)
            }
        }
        var options: OpaquePointer?
        av_dict_set(&options, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0)
        status = avformat_write_header(container, &options)
        av_dict_free(&options)
        guard status >= 0 else { throw CodecError(.muxerFailed, "cannot write the clip's header", status: status) }

        // Every track is moved back by the first keyframe's time, so the clip starts at zero.
        let origin = first.time
        var frames = 0
        var end = MediaTime.zero
        for kept in packets {
            guard let copy = av_packet_clone(kept.packet.packet), let stream = container.pointee.streams[kept.stream] else {
                throw CodecError(.muxerFailed, "out of memory")
            }
            var owned: UnsafeMutablePointer<AVPacket>? = copy
            defer { av_packet_free(&owned) }
            let codec = codecs[kept.stream], codecBase = codec.pointee.time_base
            // An audio packet is stamped before its encoder's priming delay (AAC: 1024 samples);
            // out of its first place in the track it is heard that much later.
            let priming = kept.stream == 0 ? 0
                : av_rescale_q(Int64(codec.pointee.initial_padding), AVRational(num: 1, den: codec.pointee.sample_rate), codecBase)
            let shift = av_rescale_q(origin.nanoseconds, AVRational(num: 1, den: 1_000_000_000), codecBase) - priming
            if copy.pointee.pts != CFFmpeg_AV_NOPTS_VALUE() { copy.pointee.pts -= shift }
            if copy.pointee.dts != CFFmpeg_AV_NOPTS_VALUE() { copy.pointee.dts -= shift }
            av_packet_rescale_ts(copy, codecBase, stream.pointee.time_base)
            copy.pointee.stream_index = Int32(kept.stream)
            if kept.stream == 0 { frames += 1 }
            end = max(end, kept.time - origin)
            status = av_interleaved_write_frame(container, copy)
            guard status >= 0 else { throw CodecError(.writeFailed, "cannot write the clip", status: status) }
        }
        status = av_write_trailer(container)
        sink.commit()
        if let error = sink.failure { throw CodecError(.writeFailed, "cannot write the clip: \(error)") }
        guard status >= 0 else { throw CodecError(.muxerFailed, "cannot finish the clip", status: status) }
        sink.sync()
        return SavedClip(duration: end, videoFrames: frames, bytes: sink.bytesWritten, startsOnKeyframe: first.startsClip)
    }
}
