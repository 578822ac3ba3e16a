import CFFmpeg
import ReplayMedia

/// H.264 (x264), HEVC (x265) or AV1 (SVT-AV1) through libavcodec: variable-frame-rate
/// input stamped in 1/90000 s, or constant-frame-rate input stamped in frames (1/fps s).
final class VideoEncoder {
    static let timescale: Int32 = 90_000
    private let encoder: EncoderContext
    var context: UnsafeMutablePointer<AVCodecContext> { encoder.context }
    private var frame: UnsafeMutablePointer<AVFrame> { encoder.frame }
    private var lastPTS: Int64 = .min
    /// What every picture must be; the stream's colour tags say it.
    let pictureFormat: PictureFormat
    let codec: VideoCodec
    /// Makes the next picture a keyframe (a stream that reconnected needs one at once).
    var keyframeRequested = false
    /// Stamped in frames: every packet lasts one.
    private let constantRate: Bool
    /// What it was opened with; movies record it so a trim can open its twin (`MovieTrimmer`).
    let settings: VideoEncoderSettings

    /// - Parameters:
    ///   - preset: x264's preset names, mapped to each encoder's own speed steps.
    ///   - quality: constant quality (the codec's `crf` for it, or lossless); nil uses `crf`.
    ///   - fixedKeyframes: keyframes exactly every `keyframeInterval` pictures and never at
    ///     scene cuts, as live ingest (and 2 s HLS segments) want.
    ///   - frameRateMode: `cfr` counts time in frames, so every packet lasts exactly 1/fps and
    ///     the track says so (its time scale a multiple of fps, every sample the same length).
    init(codec: VideoCodec = .h264, width: Int, height: Int, pictureFormat: PictureFormat, fps: Int, preset: String, bitRate: Int?,
         crf: Int, quality: VideoQuality? = nil, keyframeInterval: Int?, fixedKeyframes: Bool = false,
         frameRateMode: FrameRateMode = .vfr) throws(CodecError) {
        if quality == .lossless && codec == .av1 {
            throw CodecError(.encoderUnavailable, "SVT-AV1 has no lossless mode: use --codec h264 or hevc for lossless")
        }
        guard let found = avcodec_find_encoder_by_name(Self.encoderName(codec)) else {
            throw CodecError(.encoderUnavailable, "FFmpeg was built without \(Self.encoderName(codec)) (\(codec.rawValue))")
        }
        encoder = try EncoderContext(codec: found)
        settings = VideoEncoderSettings(codec: codec, preset: preset, bitRate: bitRate, crf: crf, quality: quality,
                                        keyframeInterval: keyframeInterval, fixedKeyframes: fixedKeyframes,
                                        frameRateMode: frameRateMode, fps: fps)
        self.pictureFormat = pictureFormat
        self.codec = codec
        constantRate = frameRateMode == .cfr
        let context = encoder.context
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = Self.pixelFormat(pictureFormat)
        // The encoders write these into the stream, so players read the colours as they were coded.
        context.pointee.colorspace = Self.colorspace(pictureFormat)
        context.pointee.color_range = Self.colorRange(pictureFormat)
        context.pointee.color_primaries = AVCOL_PRI_BT709   // the screen's sRGB
        context.pointee.color_trc = AVCOL_TRC_IEC61966_2_1
        context.pointee.time_base = AVRational(num: 1, den: constantRate ? Int32(fps) : Self.timescale)
        context.pointee.framerate = AVRational(num: Int32(fps), den: 1)
        context.pointee.gop_size = Int32(keyframeInterval ?? fps)
        context.pointee.max_b_frames = 0
        // MP4 keeps the parameter sets in the track header, not in every keyframe.
        context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        let options = context.pointee.priv_data
        switch codec {
        case .h264, .hevc:
            av_opt_set(options, "preset", preset, 0)
            av_opt_set(options, "tune", "zerolatency", 0)
            av_opt_set(options, "forced-idr", "1", 0)
            var parameters = codec == .hevc ? ["log-level=error"] : []
            if fixedKeyframes { parameters.append("scenecut=0") }
            if quality == .lossless { parameters.append(codec == .hevc ? "lossless=1" : "qp=0") }
            if !parameters.isEmpty {
                av_opt_set(options, codec == .hevc ? "x265-params" : "x264-params", parameters.joined(separator: ":"), 0)
            }
        case .av1:
            av_opt_set(options, "preset", String(Self.svtPreset(preset)), 0)
        }
        if let bitRate {
            // A one-second VBV caps the rate as well as averaging it: what an ingest server
            // (and a viewer's connection) can take.
            context.pointee.bit_rate = Int64(bitRate)
            context.pointee.rc_max_rate = Int64(bitRate)
            context.pointee.rc_buffer_size = Int32(clamping: bitRate)
        } else if quality != .lossless {
            av_opt_set(options, "crf", String(quality.map { Self.crf($0, codec: codec) } ?? crf), 0)
        }
        try encoder.open(describing: "the \(codec.rawValue) encoder (preset \(preset))")
    }

    /// An encoder opened as `settings` say, for pictures of this size and format.
    convenience init(_ settings: VideoEncoderSettings, width: Int, height: Int, pictureFormat: PictureFormat) throws(CodecError) {
        try self.init(codec: settings.codec, width: width, height: height, pictureFormat: pictureFormat, fps: settings.fps,
                      preset: settings.preset, bitRate: settings.bitRate, crf: settings.crf, quality: settings.quality,
                      keyframeInterval: settings.keyframeInterval, fixedKeyframes: settings.fixedKeyframes,
                      frameRateMode: settings.frameRateMode)
    }

    static func encoderName(_ codec: VideoCodec) -> String {
        switch codec {
        case .h264: "libx264"
        case .hevc: "libx265"
        case .av1: "libsvtav1"
        }
    }

    /// Each codec's constant-quality value for a quality step: the lossy steps chosen to look
    /// alike across codecs (x265's and SVT-AV1's scales run higher than x264's for the same look).
    static func crf(_ quality: VideoQuality, codec: VideoCodec) -> Int {
        switch (codec, quality) {
        case (.h264, .low): 30
        case (.h264, .medium): 23
        case (.h264, .high): 18
        case (.hevc, .low): 32
        case (.hevc, .medium): 27
        case (.hevc, .high): 22
        case (.av1, .low): 45
        case (.av1, .medium): 35
        case (.av1, .high): 27
        case (_, .lossless): 0
        }
    }

    /// SVT-AV1's presets run from 0 (slowest) to 13: x264's names mapped onto them. Even its
    /// fastest costs several times x264's ultrafast on screen content.
    static func svtPreset(_ x264Preset: String) -> Int {
        let steps = ["ultrafast": 12, "superfast": 11, "veryfast": 10, "faster": 9, "fast": 8, "medium": 7,
                     "slow": 5, "slower": 3, "veryslow": 1]
        return steps[x264Preset] ?? 10
    }

    /// `time` in the encoder's time base: what `encode` takes.
    func pts(_ time: MediaTime) -> Int64 { time.value(timescale: Int64(context.pointee.time_base.den)) }

    /// Encodes one picture shown at `pts` (in the time base: `pts(_:)`); packets go to `emit`.
    func encode(_ pixels: PixelBuffer, pts: Int64, emit: (UnsafeMutablePointer<AVPacket>) throws(CodecError) -> Void) throws(CodecError) {
        // The frame points at the picture's own memory (no copy); the reference the buffer
        // holds keeps that memory alive for as long as FFmpeg wants it.
        guard pixels.format == pictureFormat else {
            throw CodecError(.encoderFailed, "a picture in \(pixels.format) cannot go into a stream of \(pictureFormat)")
        }
        av_frame_unref(frame)
        frame.pointee.format = Self.pixelFormat(pixels.format).rawValue
        frame.pointee.width = Int32(pixels.width)
        frame.pointee.height = Int32(pixels.height)
        frame.pointee.colorspace = context.pointee.colorspace
        frame.pointee.color_range = context.pointee.color_range
        frame.pointee.color_primaries = context.pointee.color_primaries
        frame.pointee.color_trc = context.pointee.color_trc
        let bytes = pixels.bytes
        let owner = Unmanaged.passRetained(pixels.storage).toOpaque()
        // FFmpeg's pointers are mutable by type; the buffer is flagged read-only, and encoders only read it.
        let base = UnsafeMutableRawPointer(mutating: pixels.baseAddress)
        guard let buffer = av_buffer_create(
            base.assumingMemoryBound(to: UInt8.self), bytes.count,
            { owner, _ in if let owner { Unmanaged<PixelStorage>.fromOpaque(owner).release() } }, owner, AV_BUFFER_FLAG_READONLY)
        else {
            Unmanaged<PixelStorage>.fromOpaque(owner).release()
            throw CodecError(.encoderFailed, "out of memory")
        }
        frame.pointee.buf.0 = buffer
        withUnsafeMutableBytes(of: &frame.pointee.data) { data in
            withUnsafeMutableBytes(of: &frame.pointee.linesize) { linesize in
                for plane in 0..<3 {
                    data.storeBytes(of: base + pixels.offset(ofPlane: plane), toByteOffset: plane * 8,
                                    as: UnsafeMutableRawPointer.self)
                    linesize.storeBytes(of: Int32(pixels.stride(ofPlane: plane)), toByteOffset: plane * 4, as: Int32.self)
                }
            }
        }
        let monotonicPTS = max(pts, lastPTS + 1)
        lastPTS = monotonicPTS
        frame.pointee.pts = monotonicPTS
        frame.pointee.pict_type = keyframeRequested ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        keyframeRequested = false
        let status = avcodec_send_frame(context, frame)
        guard status >= 0 else { throw CodecError(.encoderFailed, "\(codec.rawValue) encoding failed", status: status) }
        try drain(emit: emit)
    }

    /// Encodes a decoded picture (of the encoder's size and pixel format) shown at `pts`, in the time base.
    func encode(decoded picture: UnsafeMutablePointer<AVFrame>, pts: Int64,
                emit: (UnsafeMutablePointer<AVPacket>) throws(CodecError) -> Void) throws(CodecError) {
        let monotonicPTS = max(pts, lastPTS + 1)
        lastPTS = monotonicPTS
        picture.pointee.pts = monotonicPTS
        // The decoder's picture type would force a keyframe wherever the source had one.
        picture.pointee.pict_type = AV_PICTURE_TYPE_NONE
        let status = avcodec_send_frame(context, picture)
        guard status >= 0 else { throw CodecError(.encoderFailed, "\(codec.rawValue) encoding failed", status: status) }
        try drain(emit: emit)
    }

    static func pixelFormat(_ format: PictureFormat) -> AVPixelFormat {
        switch format.pixelFormat {
        case .i420: AV_PIX_FMT_YUV420P
        }
    }

    private static func colorspace(_ format: PictureFormat) -> AVColorSpace {
        switch format.matrix {
        case .bt601: AVCOL_SPC_SMPTE170M
        case .bt709: AVCOL_SPC_BT709
        }
    }

    private static func colorRange(_ format: PictureFormat) -> AVColorRange {
        switch format.range {
        case .video: AVCOL_RANGE_MPEG
        case .full: AVCOL_RANGE_JPEG
        }
    }

    func finish(emit: (UnsafeMutablePointer<AVPacket>) throws(CodecError) -> Void) throws(CodecError) {
        _ = avcodec_send_frame(context, nil)
        try drain(emit: emit)
    }

    private func drain(emit: (UnsafeMutablePointer<AVPacket>) throws(CodecError) -> Void) throws(CodecError) {
        // At a constant rate every packet's length is known, one frame: said, so that the MP4's
        // last sample is not left to the muxer's guess.
        let constantRate = self.constantRate
        try receivePackets(from: context, what: codec.rawValue) { packet throws(CodecError) in
            if constantRate, packet.pointee.duration <= 0 { packet.pointee.duration = 1 }
            try emit(packet)
        }
    }
}

/// Pulls every packet the encoder has ready and hands each to `emit`.
func receivePackets(
    from context: UnsafeMutablePointer<AVCodecContext>, what: String,
    emit: (UnsafeMutablePointer<AVPacket>) throws(CodecError) -> Void
) throws(CodecError) {
    guard let packet = av_packet_alloc() else { throw CodecError(.encoderFailed, "out of memory") }
    defer {
        var owned: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&owned)
    }
    while true {
        let status = avcodec_receive_packet(context, packet)
        if status == CFFmpeg_AVERROR(EAGAIN) || status == CFFmpeg_AVERROR_EOF() { return }
        guard status >= 0 else { throw CodecError(.encoderFailed, "\(what) encoding failed", status: status) }
        try emit(packet)
        av_packet_unref(packet)
    }
}
