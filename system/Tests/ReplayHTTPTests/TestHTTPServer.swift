import FoundationEssentials
import NIOCore
import NIOHTTP1
import NIOPosix
import ReplayHTTP
import ReplayTestEvents

/// A real HTTP/1.1 server on 127.0.0.1 (NIO's), started by a test and stopped by it, that
/// reports every request it receives and answers by path:
///
/// - `/created`: 201 with a relative Location and an SDP-like body (a WHIP answer)
/// - `/missing`: 404 with a body
/// - `/redirect`: 307 to `/created`
/// - `/large`: 200 with a body one byte over `HTTPClient.maximumBodySize`
/// - `/silent`: never answers (the connection stays open until the server stops)
final class TestHTTPServer: Sendable {
    struct Received: Sendable {
        let method: String
        let path: String
        let headers: [HTTPField]
        let body: String

        func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    }

    let port: Int
    /// Every request, as it has been read whole.
    let requests: Events<Received>
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel

    private init(port: Int, requests: Events<Received>, group: MultiThreadedEventLoopGroup, channel: any Channel) {
        self.port = port
        self.requests = requests
        self.group = group
        self.channel = channel
    }

    /// Runs `body` with a server listening; stops it afterwards, whether `body` threw or not.
    static func with<Result>(_ body: (TestHTTPServer) async throws -> Result) async throws -> Result {
        let server = try await start()
        do {
            let result = try await body(server)
            try await server.stop()
            return result
        } catch {
            try? await server.stop()
            throw error
        }
    }

    private static func start() async throws -> TestHTTPServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let requests = Events<Received>()
        do {
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        try channel.pipeline.syncOperations.addHandler(Routes(requests: requests))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            guard let port = channel.localAddress?.port else { throw TestFailure("the server has no port") }
            return TestHTTPServer(port: port, requests: requests, group: group, channel: channel)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// Closes the listener and every connection (the silent ones too).
    func stop() async throws {
        try? await channel.close().get()
        try await group.shutdownGracefully()
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Answers one connection's requests by path (see `TestHTTPServer`).
private final class Routes: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let requests: Events<TestHTTPServer.Received>
    private var head: HTTPRequestHead?
    private var body = ""

    init(requests: Events<TestHTTPServer.Received>) { self.requests = requests }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = ""
        case .body(let buffer):
            body += String(buffer: buffer)
        case .end:
            guard let head else { return }
            requests.record(.init(method: head.method.rawValue, path: head.uri,
                                  headers: head.headers.map { HTTPField($0.name, $0.value) }, body: body))
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let status: HTTPResponseStatus
        var headers = HTTPHeaders()
        var text = ""
        switch head.uri {
        case "/created":
            status = .created
            headers.add(name: "Location", value: "/resource/7")
            headers.add(name: "Content-Type", value: "application/sdp")
            text = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\n"
        case "/redirect":
            status = .temporaryRedirect
            headers.add(name: "Location", value: "/created")
        case "/large":
            status = .ok
            text = String(repeating: "a", count: HTTPClient.maximumBodySize + 1)
        case "/silent":
            return
        default:
            status = .notFound
            text = "no such thing\n"
        }
        headers.add(name: "Content-Length", value: String(text.utf8.count))
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
