import CFFmpeg
public import ReplayMedia

/// What goes into a movie: one H.264 track and zero or more AAC tracks.
public struct MovieFormat: Sendable {
    public var width: Int
    public var height: Int
    /// What every picture is in; the video track is tagged with it.
    public var picture: PictureFormat
    public var fps: Int
    public var preset: String
    public var bitRate: Int?
    public var crf: Int
    public var keyframeInterval: Int?
    public var codec: VideoCodec
    /// Constant quality for the codec; nil uses `crf`.
    public var quality: VideoQuality?
    /// One AAC track per source, in this order.
    public var audioSources: [AudioSource]
    public var sampleRate: Int
    public var channels: Int
    /// `cfr`: the pictures come on the 1/fps grid, and the video track is timed in frames.
    public var frameRateMode: FrameRateMode

    public init(width: Int, height: Int, picture: PictureFormat, fps: Int, preset: String = "ultrafast", bitRate: Int? = nil, crf: Int = 23,
                keyframeInterval: Int? = nil, codec: VideoCodec = .h264, quality: VideoQuality? = nil,
                audioSources: [AudioSource], sampleRate: Int = 48_000, channels: Int = 2, frameRateMode: FrameRateMode = .vfr) {
        self.codec = codec
        self.quality = quality
        self.width = width
        self.height = height
        self.picture = picture
        self.fps = fps
        self.preset = preset
        self.bitRate = bitRate
        self.crf = crf
        self.keyframeInterval = keyframeInterval
        self.audioSources = audioSources
        self.sampleRate = sampleRate
        self.channels = channels
        self.frameRateMode = frameRateMode
    }
}

/// Encodes and writes a fragmented MP4: a fragment at least every second, each pushed to
/// disk as soon as it is complete, so a crash or a full disk costs at most the last second.
public final class MovieWriter {
    public let format: MovieFormat
    private let sink: FileSink
    private var container: UnsafeMutablePointer<AVFormatContext>?
    private let video: VideoEncoder
    private let audio: [AudioSource: AudioEncoder]
    private var streamIndex: [AudioSource: Int32] = [:]
    private var finished = false
    /// Video frames handed to the encoder.
    public private(set) var videoFrames = 0

    public var bytesWritten: Int64 { sink.bytesWritten }

    public init(path: String, format: MovieFormat) throws(CodecError) {
        // FFmpeg's own chatter (x264's statistics) would end up in the daemon's log for every recording.
        av_log_set_level(AV_LOG_ERROR)
        self.format = format
        do { sink = try FileSink(path: path) } catch {
            throw CodecError(.writeFailed, "cannot create the movie file: \(error)")
        }
        video = try VideoEncoder(codec: format.codec, width: format.width, height: format.height, pictureFormat: format.picture,
                                 fps: format.fps, preset: format.preset, bitRate: format.bitRate, crf: format.crf,
                                 quality: format.quality, keyframeInterval: format.keyframeInterval,
                                 frameRateMode: format.frameRateMode)
        var encoders: [AudioSource: AudioEncoder] = [:]
        for source in format.audioSources {
            // Trimmed, so the video track starts at zero too (a constant rate's first frame on its grid).
            encoders[source] = try AudioEncoder(sampleRate: format.sampleRate, channels: format.channels, trimsPriming: true)
        }
        audio = encoders

        var status = avformat_alloc_output_context2(&container, nil, "mp4", nil)
        guard status >= 0, let container else { throw CodecError(.muxerFailed, "cannot create the MP4 muxer", status: status) }
        container.pointee.pb = sink.context
        container.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        try addStream(for: video.context, title: nil)
        for source in format.audioSources {
            guard let encoder = encoders[source] else { continue }
            streamIndex[source] = try addStream(for: encoder.context, title: source == .app ? "app audio" : "microphone")
        }
        // How the video was encoded, so that a trim can splice pictures of its own into it.
        // MP4 drops a track's free-form tags; use_metadata_tags keeps the movie's.
        av_dict_set(&container.pointee.metadata, VideoEncoderSettings.tagKey, video.settings.tag, 0)
        var options: OpaquePointer?
        av_dict_set(&options, "movflags", "frag_keyframe+empty_moov+default_base_moof+use_metadata_tags", 0)
        av_dict_set(&options, "frag_duration", "1000000", 0)
        status = avformat_write_header(container, &options)
        av_dict_free(&options)
        guard status >= 0 else { throw failure("cannot write the MP4 header", status: status) }
        sink.commit()
        if let error = sink.failure { throw CodecError(.writeFailed, "cannot write the movie: \(error)") }
    }

    deinit {
        if let container { avformat_free_context(container) }
    }

    public func append(_ sample: VideoSample, at time: MediaTime) throws(CodecError) {
        try video.encode(sample.pixels, pts: video.pts(time)) { packet throws(CodecError) in try write(packet, from: video.context, stream: 0) }
        videoFrames += 1
    }

    /// Appends gap-free samples to the track of `source`.
    public func append(audio samples: [Float], source: AudioSource) throws(CodecError) {
        guard let encoder = audio[source], let index = streamIndex[source] else { return }
        try encoder.encode(samples) { packet throws(CodecError) in try write(packet, from: encoder.context, stream: index) }
    }

    /// Audio frames accepted for `source` so far.
    public func audioFrames(of source: AudioSource) -> Int64 { audio[source]?.framesAccepted ?? 0 }

    /// Flushes the encoders and closes the movie. After a write failure the file is cut back
    /// to its last whole fragment and the failure is rethrown.
    public func finish() throws(CodecError) {
        guard !finished else { return }
        finished = true
        try video.finish { packet throws(CodecError) in try write(packet, from: video.context, stream: 0) }
        for (source, encoder) in audio {
            guard let index = streamIndex[source] else { continue }
            try encoder.finish { packet throws(CodecError) in try write(packet, from: encoder.context, stream: index) }
        }
        let status = av_write_trailer(container)
        guard status >= 0 else { throw failure("cannot finish the movie", status: status) }
        sink.commit()
        if let error = sink.failure {
            sink.cutBackToCommitted()
            throw CodecError(.writeFailed, "cannot write the movie: \(error)")
        }
        sink.sync()
    }

    /// Leaves the file as it is on disk after an earlier failure, playable up to its last fragment.
    public func abandon() {
        finished = true
        sink.cutBackToCommitted()
    }

    @discardableResult
    private func addStream(for codec: UnsafeMutablePointer<AVCodecContext>, title: String?) throws(CodecError) -> Int32 {
        guard let stream = avformat_new_stream(container, nil) else { throw CodecError(.muxerFailed, "out of memory") }
        let status = avcodec_parameters_from_context(stream.pointee.codecpar, codec)
        guard status >= 0 else { throw CodecError(.muxerFailed, "cannot describe a track", status: status) }
        stream.pointee.time_base = codec.pointee.time_base
        // MP4 names a track in its handler box.
        if let title { av_dict_set(&stream.pointee.metadata, "handler_name", title, 0) }
        return stream.pointee.index
    }

    private func write(_ packet: UnsafeMutablePointer<AVPacket>, from codec: UnsafeMutablePointer<AVCodecContext>,
                       stream: Int32) throws(CodecError) {
        guard let container, let target = container.pointee.streams[Int(stream)] else {
            throw CodecError(.muxerFailed, "the movie has no track \(stream)")
        }
        av_packet_rescale_ts(packet, codec.pointee.time_base, target.pointee.time_base)
        packet.pointee.stream_index = stream
        let status = av_interleaved_write_frame(container, packet)
        guard status >= 0 else { throw failure("cannot write to the movie", status: status) }
        sink.commit()
        if let error = sink.failure {
            sink.cutBackToCommitted()
            throw CodecError(.writeFailed, "cannot write the movie: \(error)")
        }
    }

    private func failure(_ what: String, status: Int32) -> CodecError {
        if let error = sink.failure {
            sink.cutBackToCommitted()
            return CodecError(.writeFailed, "cannot write the movie: \(error)")
        }
        return CodecError(.muxerFailed, what, status: status)
    }
}
