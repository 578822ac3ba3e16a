import CFFmpeg
import ReplaySystem

/// An FFmpeg encoder and the one frame it is fed through, allocated and freed together.
///
/// Closing one gives its memory back to the system, not only to malloc: SVT-AV1 and x265
/// free hundreds of MB at close that glibc would otherwise keep resident in its arenas, so
/// an idle daemon grew by each AV1 or HEVC take (issue 26).
final class EncoderContext {
    let codec: UnsafePointer<AVCodec>
    let context: UnsafeMutablePointer<AVCodecContext>
    let frame: UnsafeMutablePointer<AVFrame>

    init(codec: UnsafePointer<AVCodec>) throws(CodecError) {
        ProcessMemory.returnLargeBlocksWhenFreed()
        guard let context = avcodec_alloc_context3(codec) else { throw CodecError(.encoderFailed, "out of memory") }
        guard let frame = av_frame_alloc() else {
            var owned: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&owned)
            throw CodecError(.encoderFailed, "out of memory")
        }
        self.codec = codec
        self.context = context
        self.frame = frame
    }

    /// Opens the encoder once its settings are in `context`.
    func open(describing what: String) throws(CodecError) {
        let status = avcodec_open2(context, codec, nil)
        guard status >= 0 else { throw CodecError(.encoderFailed, "cannot open \(what)", status: status) }
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&context)
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&frame)
        ProcessMemory.returnFreedMemory()
    }
}
