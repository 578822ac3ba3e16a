import NIOCore
import ReplayCaptureModel
import ReplayIPC

/// Cuts a client's byte stream into framed requests (`FrameCodec`): every length is checked
/// against the request limits before anything is buffered, so a hostile client cannot make
/// the daemon wait for or hold more than one small request.
struct RequestFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = [UInt8]

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let header = buffer.getBytes(at: buffer.readerIndex, length: FrameCodec.headerSize) else { return .needMoreData }
        let lengths = try FrameCodec.decodeHeader(header, limits: .requests)
        guard buffer.readableBytes >= FrameCodec.headerSize + lengths.json + lengths.body else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: FrameCodec.headerSize)
        let json = buffer.readBytes(length: lengths.json)!  // length checked just above
        buffer.moveReaderIndex(forwardBy: lengths.body)
        context.fireChannelRead(Self.wrapInboundOut(json))
        return .continue
    }

    func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0 { throw ProtocolError.truncated }
        return .needMoreData
    }
}
