import NIOCore
import ReplayCaptureModel

/// The event loop's side of one client: hands each framed request to its connection, and
/// tells it when the client is gone. Nothing here blocks the loop.
final class ConnectionHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = [UInt8]

    let connection: ClientConnection

    init(connection: ClientConnection) { self.connection = connection }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        connection.received(unwrapInboundIn(data))
    }

    /// The client shut down its sending side: it asks nothing more, and what it asked is answered first.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { connection.disconnected() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.disconnected()
        context.fireChannelInactive()
    }

    /// A frame the decoder refused (too long, truncated): the connection says why and closes.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        connection.receivedMalformed(error)
    }
}
