import CFFmpeg

/// AAC (FFmpeg's native encoder) fed with a gap-free stream of interleaved float samples;
/// it cuts them into the encoder's 1024-frame periods itself.
///
/// AAC opens with a period of priming (1024 frames): its first packet is stamped that long
/// before the first sample given. A movie's fragments cannot start a track before zero, so
/// the muxer would move every track later by the priming, the video's first frame stretched
/// to cover it (off a constant rate's grid). `trimsPriming` leaves out the track's first
/// 1024 frames instead: the priming then takes their place, its packet stamped at zero, and
/// every sample after is heard when it was captured.
final class AudioEncoder {
    private let encoder: EncoderContext
    var context: UnsafeMutablePointer<AVCodecContext> { encoder.context }
    private var frame: UnsafeMutablePointer<AVFrame> { encoder.frame }
    let sampleRate: Int
    let channels: Int
    private let frameSize: Int
    private var pending: [Float] = []
    private var nextPTS: Int64 = 0
    /// Frames of the track before this one are left out (the encoder's priming when trimmed, else 0).
    private let firstKept: Int64

    init(sampleRate: Int, channels: Int, bitRate: Int = 128_000, trimsPriming: Bool = false) throws(CodecError) {
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_AAC) else {
            throw CodecError(.encoderUnavailable, "FFmpeg was built without an AAC encoder")
        }
        encoder = try EncoderContext(codec: codec)
        let context = encoder.context
        self.sampleRate = sampleRate
        self.channels = channels
        context.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        context.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&context.pointee.ch_layout, Int32(channels))
        context.pointee.bit_rate = Int64(bitRate)
        context.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
        context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        try encoder.open(describing: "the AAC encoder")
        frameSize = Int(context.pointee.frame_size)
        firstKept = trimsPriming ? Int64(context.pointee.initial_padding) : 0
    }

    /// Frames (per channel) accepted so far: the audio track's length.
    var framesAccepted: Int64 { nextPTS + Int64(pending.count / channels) }

    func encode(_ interleaved: [Float], emit: (UnsafeMutablePointer<AVPacket>) throws(CodecError) -> Void) throws(CodecError) {
        // Nothing is pending before the first kept frame: whatever precedes it is only counted.
        let left = nextPTS < firstKept ? min(firstKept - nextPTS, Int64(interleaved.count / channels)) : 0
        nextPTS += left
        pending += left > 0 ? interleaved.dropFirst(Int(left) * channels) : interleaved[...]
        var offset = 0
        while pending.count - offset >= frameSize * channels {
            try encodePeriod(pending, from: offset, frames: frameSize, emit: emit)
            offset += frameSize * channels
        }
        pending.removeFirst(offset)
    }

    /// Moves the track's clock forward to `pts` (a gap in the source): the next sample
    /// accepted plays at `pts`. Audio still pending is encoded first.
    func skip(to pts: Int64, emit: (UnsafeMutablePointer<AVPacket>) throws(CodecError) -> Void) throws(CodecError) {
        guard pts > framesAccepted else { return }
        if !pending.isEmpty {
            try encodePeriod(pending, from: 0, frames: pending.count / channels, emit: emit)
            pending.removeAll()
        }
        nextPTS = max(nextPTS, pts)
    }

    func finish(emit: (UnsafeMutablePointer<AVPacket>) throws(CodecError) -> Void) throws(CodecError) {
        if !pending.isEmpty {
            try encodePeriod(pending, from: 0, frames: pending.count / channels, emit: emit)
            pending.removeAll()
        }
        _ = avcodec_send_frame(context, nil)
        try receivePackets(from: context, what: "AAC", emit: emit)
    }

    private func encodePeriod(_ samples: [Float], from offset: Int, frames: Int,
                              emit: (UnsafeMutablePointer<AVPacket>) throws(CodecError) -> Void) throws(CodecError) {
        av_frame_unref(frame)
        frame.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        frame.pointee.sample_rate = Int32(sampleRate)
        frame.pointee.nb_samples = Int32(frames)
        av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout)
        var status = av_frame_get_buffer(frame, 0)
        guard status >= 0 else { throw CodecError(.encoderFailed, "cannot allocate an audio frame", status: status) }
        // Interleaved to planar: AAC wants one plane per channel.
        for channel in 0..<channels {
            let plane = withUnsafeBytes(of: frame.pointee.data) {
                $0.load(fromByteOffset: channel * 8, as: UnsafeMutableRawPointer.self)
            }.assumingMemoryBound(to: Float.self)
            for index in 0..<frames {
                plane[index] = samples[offset + index * channels + channel]
            }
        }
        frame.pointee.pts = nextPTS
        nextPTS += Int64(frames)
        status = avcodec_send_frame(context, frame)
        guard status >= 0 else { throw CodecError(.encoderFailed, "AAC encoding failed", status: status) }
        try receivePackets(from: context, what: "AAC", emit: emit)
    }
}
