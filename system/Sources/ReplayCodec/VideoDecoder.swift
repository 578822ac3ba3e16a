import CFFmpeg

/// An FFmpeg decoder for one stream of a movie being read, and the frame it decodes into.
final class VideoDecoder {
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let frame: UnsafeMutablePointer<AVFrame>

    init(_ stream: UnsafeMutablePointer<AVStream>) throws(CodecError) {
        let parameters = stream.pointee.codecpar!
        guard let codec = avcodec_find_decoder(parameters.pointee.codec_id) else {
            throw CodecError(.encoderUnavailable, "FFmpeg has no decoder for the movie's video")
        }
        guard let context = avcodec_alloc_context3(codec), let frame = av_frame_alloc() else {
            throw CodecError(.encoderFailed, "out of memory")
        }
        self.context = context
        self.frame = frame
        var status = avcodec_parameters_to_context(context, parameters)
        guard status >= 0 else { throw CodecError(.encoderFailed, "cannot set up the video decoder", status: status) }
        context.pointee.pkt_timebase = stream.pointee.time_base
        status = avcodec_open2(context, codec, nil)
        guard status >= 0 else { throw CodecError(.encoderFailed, "cannot open the video decoder", status: status) }
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&context)
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&frame)
    }

    /// Decodes `packet` (nil: the end, every picture still held comes out) and hands each
    /// picture, stamped in the stream's time base, to `emit`.
    func decode(_ packet: UnsafeMutablePointer<AVPacket>?,
                emit: (UnsafeMutablePointer<AVFrame>, Int64) throws(CodecError) -> Void) throws(CodecError) {
        var status = avcodec_send_packet(context, packet)
        guard status >= 0 || status == CFFmpeg_AVERROR_EOF() else {
            throw CodecError(.encoderFailed, "cannot decode the movie's video", status: status)
        }
        while true {
            status = avcodec_receive_frame(context, frame)
            if status == CFFmpeg_AVERROR(EAGAIN) || status == CFFmpeg_AVERROR_EOF() { return }
            guard status >= 0 else { throw CodecError(.encoderFailed, "cannot decode the movie's video", status: status) }
            let pts = frame.pointee.best_effort_timestamp
            try emit(frame, pts)
            av_frame_unref(frame)
        }
    }
}
