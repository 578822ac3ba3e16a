import NIOCore
import ReplayCaptureModel
import ReplayIPC

/// Cuts a client's byte stream into framed requests (`FrameCodec`): every length is checked
/// against the request limits before anything is buffered, so a hostile client cannot make
/// the daemon wait for or hold more than one small request. A request begun must arrive whole
/// within `wholeWithin`: a writer that sends half a frame and stops would otherwise hold its
/// connection, and its place under the connection caps, for as long as it likes.
struct RequestFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = [UInt8]

    /// How long the rest of a request may take once its first byte came. A request is at most
    /// 64 KiB on a local socket: a client that means it sends it at once.
    static let wholeWithin = TimeAmount.seconds(5)

    private var deadline: Scheduled<Void>?

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let header = buffer.getBytes(at: buffer.readerIndex, length: FrameCodec.headerSize) else { return waitForTheRest(context, buffer) }
        let lengths = try FrameCodec.decodeHeader(header, limits: .requests)
        guard buffer.readableBytes >= FrameCodec.headerSize + lengths.json + lengths.body else { return waitForTheRest(context, buffer) }
        deadline?.cancel()
        deadline = nil
        buffer.moveReaderIndex(forwardBy: FrameCodec.headerSize)
        let json = buffer.readBytes(length: lengths.json)!  // length checked just above
        buffer.moveReaderIndex(forwardBy: lengths.body)
        context.fireChannelRead(Self.wrapInboundOut(json))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        deadline?.cancel()
        deadline = nil
        if buffer.readableBytes > 0 { throw ProtocolError.truncated }
        return .needMoreData
    }

    /// A frame has begun but is not whole: its time starts with its first byte, once.
    private mutating func waitForTheRest(_ context: ChannelHandlerContext, _ buffer: ByteBuffer) -> DecodingState {
        guard buffer.readableBytes > 0, deadline == nil else { return .needMoreData }
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: Self.wholeWithin) {
            guard context.channel.isActive else { return }
            context.fireErrorCaught(ProtocolError.malformed(
                "a request was begun but not sent whole within \(Self.wholeWithin.nanoseconds / 1_000_000_000) s"))
        }
        return .needMoreData
    }
}
