import CLibAV
import ReplayMedia

/// Something FFmpeg refused, as a sentence the person can read in `replay broadcast status`.
struct HLSError: Error, CustomStringConvertible {
    let description: String

    init(_ what: String, status: Int32? = nil) {
        guard let status else {
            description = what
            return
        }
        var text = [CChar](repeating: 0, count: 128)
        av_strerror(status, &text, text.count)
        description = "\(what): \(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))"
    }
}

/// Encodes pictures with x264 (H.264) and sound with FFmpeg's AAC encoder, and writes both as
/// an HLS stream: `stream.m3u8` and `segment-00000.ts`, `segment-00001.ts`… in a directory.
///
/// Everything is stamped from one origin, the first picture's capture time, so picture and
/// sound keep the sync they had on the screen and in the speakers. All calls come from the
/// extension's callback thread: no locking is needed.
///
/// To upload somewhere instead, keep the encoders and change the muxer (see `open`): "flv"
/// with an rtmp:// URL, or "mpegts" with srt://, and FFmpeg does the networking.
final class HLSWriter {
    struct Settings: Equatable {
        var width: Int
        var height: Int
        /// What the rate control plans for; pictures may come slower (a still screen).
        var fps = 30
        var videoBitRate = 2_500_000
        var audioBitRate = 128_000
        /// Each segment starts with a keyframe, exactly this far apart.
        var segmentSeconds = 2
    }

    /// Video is stamped in 1/90000 s (MPEG-TS's own clock), audio in samples at 48 kHz: what
    /// `AudioMixer` hands out.
    static let videoTimeBase = AVRational(num: 1, den: 90_000)
    static let sampleRate: Int32 = 48_000
    static let channels = 2

    let settings: Settings
    let directory: String
    // Every FFmpeg object starts as nil, so that `deinit` frees whatever `init` got to make,
    // also when `init` throws half-way.
    private var output: UnsafeMutablePointer<AVFormatContext>?
    private var video: UnsafeMutablePointer<AVCodecContext>?
    private var audio: UnsafeMutablePointer<AVCodecContext>?
    private var videoStream: UnsafeMutablePointer<AVStream>?
    private var audioStream: UnsafeMutablePointer<AVStream>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?

    /// The first picture's capture time: time zero of the stream.
    private var origin: MediaTime?
    private var lastVideoPTS: Int64 = -1
    private var nextKeyframePTS: Int64 = 0
    /// Interleaved samples not yet encoded (an AAC frame is `audio.frame_size`, 1024, frames;
    /// AudioMixer's periods are exactly that, so this is normally empty between calls).
    private var pendingAudio: [Float] = []
    private var pendingAudioPTS: Int64 = 0
    private var nextAudioPTS: Int64 = 0
    private(set) var picturesWritten = 0
    private var finished = false

    /// Opens both encoders and the HLS muxer: `directory/stream.m3u8` and its segments.
    init(directory: String, settings: Settings) throws(HLSError) {
        self.settings = settings
        self.directory = directory
        av_log_set_level(AV_LOG_ERROR)  // FFmpeg's chatter would go to replayd's log
        frame = av_frame_alloc()
        packet = av_packet_alloc()
        guard frame != nil, packet != nil else { throw HLSError("out of memory") }
        try open(directory: directory)
    }

    deinit {
        avcodec_free_context(&video)
        avcodec_free_context(&audio)
        av_frame_free(&frame)
        av_packet_free(&packet)
        if let output {
            if output.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 { avio_closep(&output.pointee.pb) }
            avformat_free_context(output)
        }
    }

    private func open(directory: String) throws(HLSError) {
        let playlist = directory + "/stream.m3u8"
        let status = avformat_alloc_output_context2(&output, nil, "hls", playlist)
        guard status >= 0, let output else { throw HLSError("cannot set up the HLS muxer", status: status) }
        let globalHeader = output.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0

        // H.264. Memory is what matters most in a sandbox limited to 50 MB: x264's grows with
        // picture size and preset, so ultrafast, zerolatency (no look-ahead: a frame in, its
        // packet out) and two threads. At 1280x720 this stays well under 50 MB.
        guard let x264 = avcodec_find_encoder_by_name("libx264") else { throw HLSError("FFmpeg was built without libx264") }
        guard let video = avcodec_alloc_context3(x264) else { throw HLSError("out of memory") }
        self.video = video
        video.pointee.width = Int32(settings.width)
        video.pointee.height = Int32(settings.height)
        video.pointee.pix_fmt = AV_PIX_FMT_YUV420P  // replayd's pictures are I420: no conversion
        // How players turn Y, U, V back into colour: replayd's pictures are BT.601, limited range
        // (docs/extensions.md), of the screen's sRGB. Untagged, a player guesses BT.709 for HD.
        video.pointee.colorspace = AVCOL_SPC_SMPTE170M
        video.pointee.color_range = AVCOL_RANGE_MPEG
        video.pointee.color_primaries = AVCOL_PRI_BT709
        video.pointee.color_trc = AVCOL_TRC_IEC61966_2_1
        video.pointee.time_base = Self.videoTimeBase
        video.pointee.framerate = AVRational(num: Int32(settings.fps), den: 1)
        // Keyframes come from `write(_:at:)`, by time; this is only a safety net behind it.
        video.pointee.gop_size = Int32(settings.fps * settings.segmentSeconds * 2)
        video.pointee.max_b_frames = 0
        video.pointee.thread_count = 2
        // A one-second buffer caps the rate as well as averaging it.
        video.pointee.bit_rate = Int64(settings.videoBitRate)
        video.pointee.rc_max_rate = Int64(settings.videoBitRate)
        video.pointee.rc_buffer_size = Int32(settings.videoBitRate)
        av_opt_set(video.pointee.priv_data, "preset", "ultrafast", 0)
        av_opt_set(video.pointee.priv_data, "tune", "zerolatency", 0)
        // Keyframes only where we ask (see `write(_:at:)`), never at scene cuts, and always IDR:
        // each segment then starts with one and can be played on its own.
        av_opt_set(video.pointee.priv_data, "x264-params", "scenecut=0", 0)
        av_opt_set(video.pointee.priv_data, "forced-idr", "1", 0)
        if globalHeader { video.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        try check(avcodec_open2(video, x264, nil), "cannot open the H.264 encoder")

        // AAC, 48 kHz stereo: FFmpeg's own encoder wants planar floats (see `encodeAudioFrame`).
        guard let aac = avcodec_find_encoder(AV_CODEC_ID_AAC) else { throw HLSError("FFmpeg has no AAC encoder") }
        guard let audio = avcodec_alloc_context3(aac) else { throw HLSError("out of memory") }
        self.audio = audio
        audio.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        audio.pointee.sample_rate = Self.sampleRate
        av_channel_layout_default(&audio.pointee.ch_layout, Int32(Self.channels))
        audio.pointee.bit_rate = Int64(settings.audioBitRate)
        audio.pointee.time_base = AVRational(num: 1, den: Self.sampleRate)
        if globalHeader { audio.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        try check(avcodec_open2(audio, aac, nil), "cannot open the AAC encoder")

        videoStream = try addStream(for: video)
        audioStream = try addStream(for: audio)

        // The HLS muxer's options (`ffmpeg -h muxer=hls` lists them all).
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        av_dict_set(&options, "hls_time", String(settings.segmentSeconds), 0)
        av_dict_set(&options, "hls_list_size", "0", 0)          // keep every segment in the playlist
        av_dict_set(&options, "hls_playlist_type", "event", 0)  // segments are only ever added
        av_dict_set(&options, "hls_segment_filename", directory + "/segment-%05d.ts", 0)
        // A segment is written as .tmp and renamed once whole: a player never reads half of one.
        av_dict_set(&options, "hls_flags", "independent_segments+temp_file", 0)
        // The HLS muxer opens its own files; other muxers (flv, mpegts) write to `pb`.
        if output.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            try check(avio_open(&output.pointee.pb, playlist, AVIO_FLAG_WRITE), "cannot open \(playlist)")
        }
        try check(avformat_write_header(output, &options), "cannot write into \(directory)")
    }

    private func addStream(for codec: UnsafeMutablePointer<AVCodecContext>) throws(HLSError) -> UnsafeMutablePointer<AVStream> {
        guard let stream = avformat_new_stream(output, nil) else { throw HLSError("out of memory") }
        try check(avcodec_parameters_from_context(stream.pointee.codecpar, codec), "cannot describe a stream")
        stream.pointee.time_base = codec.pointee.time_base
        return stream
    }

    /// Encodes one picture captured at `time`. The pixels are only read: they are copied into
    /// FFmpeg's own frame, so a picture in replayd's shared memory goes back at once.
    func write(_ pixels: PixelBuffer, at time: MediaTime) throws(HLSError) {
        guard let video, let frame, !finished else { return }
        guard pixels.width == settings.width, pixels.height == settings.height else {
            throw HLSError("the picture is \(pixels.width)x\(pixels.height), the stream \(settings.width)x\(settings.height)")
        }
        if origin == nil { origin = time }
        guard let origin, time >= origin else { return }
        // Stamps must grow: two pictures rounded to the same 1/90000 s keep their order.
        let pts = max((time - origin).value(timescale: 90_000), lastVideoPTS + 1)
        lastVideoPTS = pts

        av_frame_unref(frame)
        frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        frame.pointee.width = Int32(pixels.width)
        frame.pointee.height = Int32(pixels.height)
        try check(av_frame_get_buffer(frame, 0), "out of memory")
        copyPlanes(of: pixels, into: frame)
        frame.pointee.pts = pts
        // A keyframe every `segmentSeconds` of capture time, whatever the frame rate.
        if pts >= nextKeyframePTS {
            frame.pointee.pict_type = AV_PICTURE_TYPE_I
            while nextKeyframePTS <= pts { nextKeyframePTS += Int64(settings.segmentSeconds) * 90_000 }
        } else {
            frame.pointee.pict_type = AV_PICTURE_TYPE_NONE
        }
        try check(avcodec_send_frame(video, frame), "H.264 encoding failed")
        try writePackets(from: video, to: videoStream)
        picturesWritten += 1
    }

    /// Y, U and V, row by row: FFmpeg's rows may be padded (`linesize`), the picture's are not.
    private func copyPlanes(of pixels: PixelBuffer, into frame: UnsafeMutablePointer<AVFrame>) {
        let source = UnsafeRawBufferPointer(pixels.bytes)  // read only
        withUnsafeBytes(of: frame.pointee.data) { data in
            withUnsafeBytes(of: frame.pointee.linesize) { linesize in
                for plane in 0..<3 {
                    let destination = data.load(fromByteOffset: plane * 8, as: UnsafeMutableRawPointer.self)
                    let destinationStride = Int(linesize.load(fromByteOffset: plane * 4, as: Int32.self))
                    let stride = pixels.stride(ofPlane: plane)
                    let start = pixels.offset(ofPlane: plane)
                    for row in 0..<pixels.height(ofPlane: plane) {
                        (destination + row * destinationStride).copyMemory(
                            from: source.baseAddress! + start + row * stride, byteCount: stride)
                    }
                }
            }
        }
    }

    /// Encodes interleaved stereo heard from `time` on (48 kHz, as AudioMixer gives it).
    func write(audio samples: [Float], at time: MediaTime) throws(HLSError) {
        guard let audio, !finished else { return }
        // Until the first picture there is no time zero: sound before it is not kept.
        guard let origin, time >= origin else { return }
        if pendingAudio.isEmpty {
            // After a pause the stamps jump ahead with the sound; they never go back.
            pendingAudioPTS = max((time - origin).value(timescale: Int64(Self.sampleRate)), nextAudioPTS)
        }
        pendingAudio += samples
        let frameSize = Int(audio.pointee.frame_size) * Self.channels
        while pendingAudio.count >= frameSize {
            try encodeAudioFrame(Array(pendingAudio[0..<frameSize]))
            pendingAudio.removeFirst(frameSize)
        }
    }

    private func encodeAudioFrame(_ interleaved: [Float]) throws(HLSError) {
        guard let audio, let frame else { return }
        let frames = interleaved.count / Self.channels
        av_frame_unref(frame)
        frame.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        frame.pointee.nb_samples = Int32(frames)
        frame.pointee.sample_rate = Self.sampleRate
        try check(av_channel_layout_copy(&frame.pointee.ch_layout, &audio.pointee.ch_layout), "out of memory")
        try check(av_frame_get_buffer(frame, 0), "out of memory")
        // Planar: all of the left channel, then all of the right.
        withUnsafeBytes(of: frame.pointee.data) { data in
            for channel in 0..<Self.channels {
                let plane = data.load(fromByteOffset: channel * 8, as: UnsafeMutablePointer<Float>.self)
                for index in 0..<frames { plane[index] = interleaved[index * Self.channels + channel] }
            }
        }
        frame.pointee.pts = pendingAudioPTS
        pendingAudioPTS += Int64(frames)
        nextAudioPTS = pendingAudioPTS
        try check(avcodec_send_frame(audio, frame), "AAC encoding failed")
        try writePackets(from: audio, to: audioStream)
    }

    /// Hands every packet the encoder has ready to the muxer.
    private func writePackets(from codec: UnsafeMutablePointer<AVCodecContext>,
                              to stream: UnsafeMutablePointer<AVStream>?) throws(HLSError) {
        guard let output, let packet, let stream else { return }
        while true {
            let status = avcodec_receive_packet(codec, packet)
            if status == CLibAV_AVERROR_EAGAIN() || status == CLibAV_AVERROR_EOF() { return }
            try check(status, "encoding failed")
            packet.pointee.stream_index = stream.pointee.index
            av_packet_rescale_ts(packet, codec.pointee.time_base, stream.pointee.time_base)
            // Buffers a little to put audio and video in time order, then writes (and takes the
            // packet's data). A full disk or a removed directory shows up here.
            try check(av_interleaved_write_frame(output, packet), "cannot write the stream into \(directory)")
        }
    }

    /// Encodes what is left and closes the playlist (`#EXT-X-ENDLIST`): the stream is complete.
    func finish() throws(HLSError) {
        guard let video, let audio, let output, !finished else { return }
        finished = true
        if !pendingAudio.isEmpty, origin != nil {
            // The last AAC frame, padded with silence.
            let frameSize = Int(audio.pointee.frame_size) * Self.channels
            try encodeAudioFrame(pendingAudio + [Float](repeating: 0, count: frameSize - pendingAudio.count))
            pendingAudio = []
        }
        for codec in [video, audio] {
            try check(avcodec_send_frame(codec, nil), "cannot finish encoding")
            try writePackets(from: codec, to: codec == video ? videoStream : audioStream)
        }
        try check(av_write_trailer(output), "cannot finish the playlist")
    }

    private func check(_ status: Int32, _ what: @autoclosure () -> String) throws(HLSError) {
        if status < 0 { throw HLSError(what(), status: status) }
    }
}
