import CFFmpeg
public import ReplayMedia

/// One compressed packet of a live stream, owned (a reference to FFmpeg's buffer) until it
/// has been sent, so a stream can hold packets while its server is away.
public final class EncodedPacket: @unchecked Sendable {
    // @unchecked: the packet is written once, here, and only read (copied from) afterwards.
    public enum Track: Sendable { case video, audio }

    public let track: Track
    public let isKeyframe: Bool
    public let byteCount: Int
    /// Decode time since the stream's origin.
    public let time: MediaTime
    let packet: UnsafeMutablePointer<AVPacket>

    /// Takes a reference to `source`, whose timestamps are in `timeBase`.
    init(referencing source: UnsafeMutablePointer<AVPacket>, track: Track, timeBase: AVRational) throws(CodecError) {
        guard let packet = av_packet_clone(source) else { throw CodecError(.encoderFailed, "out of memory") }
        self.packet = packet
        self.track = track
        isKeyframe = packet.pointee.flags & AV_PKT_FLAG_KEY != 0
        byteCount = Int(packet.pointee.size)
        let dts = packet.pointee.dts == CFFmpeg_AV_NOPTS_VALUE() ? packet.pointee.pts : packet.pointee.dts
        time = MediaTime(nanoseconds: av_rescale_q(dts, timeBase, AVRational(num: 1, den: 1_000_000_000)))
    }

    deinit {
        var owned: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&owned)
    }
}
