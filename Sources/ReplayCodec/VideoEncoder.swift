import CFFmpeg
import ReplayMedia

/// H.264 through libavcodec's libx264, for variable-frame-rate input stamped in 1/90000 s.
final class VideoEncoder {
    static let timescale: Int32 = 90_000
    let context: UnsafeMutablePointer<AVCodecContext>
    private let frame: UnsafeMutablePointer<AVFrame>
    private var lastPTS: Int64 = .min

    init(width: Int, height: Int, fps: Int, preset: String, bitRate: Int?, crf: Int, keyframeInterval: Int?) throws(CodecError) {
        guard let codec = avcodec_find_encoder_by_name("libx264") else {
            throw CodecError(.encoderUnavailable, "FFmpeg was built without libx264")
        }
        guard let context = avcodec_alloc_context3(codec), let frame = av_frame_alloc() else {
            throw CodecError(.encoderFailed, "out of memory")
        }
        self.context = context
        self.frame = frame
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        context.pointee.time_base = AVRational(num: 1, den: Self.timescale)
        context.pointee.framerate = AVRational(num: Int32(fps), den: 1)
        context.pointee.gop_size = Int32(keyframeInterval ?? fps)
        context.pointee.max_b_frames = 0
        // MP4 keeps the parameter sets in the track header, not in every keyframe.
        context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        av_opt_set(context.pointee.priv_data, "preset", preset, 0)
        av_opt_set(context.pointee.priv_data, "tune", "zerolatency", 0)
        if let bitRate {
            context.pointee.bit_rate = Int64(bitRate)
        } else {
            av_opt_set(context.pointee.priv_data, "crf", String(crf), 0)
        }
        let status = avcodec_open2(context, codec, nil)
        guard status >= 0 else {
            var context: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&context)
            var frame: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&frame)
            throw CodecError(.encoderFailed, "cannot open the H.264 encoder (preset \(preset))", status: status)
        }
        frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&context)
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&frame)
    }

    /// Encodes one picture shown at `pts` (1/90000 s); packets go to `emit`.
    func encode(_ pixels: PixelBuffer, pts: Int64, emit: (UnsafeMutablePointer<AVPacket>) throws(CodecError) -> Void) throws(CodecError) {
        // x264 keeps references to its input, so each picture gets fresh, refcounted planes.
        av_frame_unref(frame)
        frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        frame.pointee.width = Int32(pixels.width)
        frame.pointee.height = Int32(pixels.height)
        var status = av_frame_get_buffer(frame, 0)
        guard status >= 0 else { throw CodecError(.encoderFailed, "cannot allocate a video frame", status: status) }
        for plane in 0..<3 {
            let rows = pixels.height(ofPlane: plane), width = pixels.stride(ofPlane: plane)
            let destinationStride = Int(withUnsafeBytes(of: frame.pointee.linesize) { $0.load(fromByteOffset: plane * 4, as: Int32.self) })
            let destination = withUnsafeBytes(of: frame.pointee.data) { $0.load(fromByteOffset: plane * 8, as: UnsafeMutablePointer<UInt8>.self) }
            let offset = pixels.offset(ofPlane: plane)
            pixels.data.withUnsafeBufferPointer { source in
                for row in 0..<rows {
                    (destination + row * destinationStride).update(from: source.baseAddress! + offset + row * width, count: width)
                }
            }
        }
        let monotonicPTS = max(pts, lastPTS + 1)
        lastPTS = monotonicPTS
        frame.pointee.pts = monotonicPTS
        status = avcodec_send_frame(context, frame)
        guard status >= 0 else { throw CodecError(.encoderFailed, "H.264 encoding failed", status: status) }
        try drain(emit: emit)
    }

    func finish(emit: (UnsafeMutablePointer<AVPacket>) throws(CodecError) -> Void) throws(CodecError) {
        _ = avcodec_send_frame(context, nil)
        try drain(emit: emit)
    }

    private func drain(emit: (UnsafeMutablePointer<AVPacket>) throws(CodecError) -> Void) throws(CodecError) {
        try receivePackets(from: context, what: "H.264", emit: emit)
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
