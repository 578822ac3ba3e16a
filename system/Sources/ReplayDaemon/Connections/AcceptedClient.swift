import Logging
import NIOCore
import NIOPosix

/// A client the listener admitted, not yet served: its socket, and what makes its connection.
struct AcceptedClient: Sendable {
    let socket: Int32
    let connect: @Sendable (any Channel) -> ClientConnection

    /// Serves the client, in the calling task, until it hangs up, is cut off, or the task is
    /// cancelled (replayd stopping). The socket goes to the event loop as an `NIOAsyncChannel`
    /// whose inbound side is the client's framed requests, which the connection reads in
    /// order; what replayd sends goes through the connection's `ClientOutbox`.
    func serve(on group: any EventLoopGroup, logger: Logger) async {
        let client: NIOAsyncChannel<[UInt8], Never>
        do {
            // A client that shuts down its sending side still gets its answers before we close.
            client = try await ClientBootstrap(group: group).channelOption(.allowRemoteHalfClosure, value: true)
                .withConnectedSocket(socket) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RequestFrameDecoder()))
                        return try NIOAsyncChannel<[UInt8], Never>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            logger.debug("a client could not be served: \(error)")
            return
        }
        let connection = connect(client.channel)
        logger.debug("client connected", metadata: ["peer": "\(connection.peerDescription)", "role": "\(connection.role)"])
        try? await client.executeThenClose { requests in await connection.serve(requests) }
    }
}
