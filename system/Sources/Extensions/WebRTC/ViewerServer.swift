import FoundationEssentials
import Hummingbird
import Logging
import ReplayLoopbackServer
import ReplaySystem
import ReplayWebRTC
import Synchronization

/// Local viewers: on 127.0.0.1, the viewer page at `/<token>/` and a WHEP endpoint at
/// `/<token>/whep` (POST an SDP offer: 201 Created with the answer and a Location; DELETE
/// that Location to leave). Each viewer is its own send-only peer of the session.
///
/// Loopback is open to every process on the machine, so every path starts with a random
/// 128-bit token, fresh for each broadcast, that only the page's URL carries: replayd shows
/// that URL to the person and the host app only. Anything without it is 404, as an unknown
/// path is.
final class ViewerServer: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Viewers at once: each is a webrtcbin with its own ICE agent and DTLS, a few MB each.
    static let maxViewers = 4

    private let session: WebRTCSession
    private let viewers = Mutex<Set<Int32>>([])
    private let task = Mutex<Task<Void, any Error>?>(nil)
    private let joined: @Sendable (Int32) -> Void
    private let left: @Sendable (Int32) -> Void
    /// The first part of every path: 32 hex digits from the system's random source.
    let token: String

    init(session: WebRTCSession, token: String = LoopbackServer.randomToken(bytes: 16),
         joined: @escaping @Sendable (Int32) -> Void, left: @escaping @Sendable (Int32) -> Void) {
        self.session = session
        self.token = token
        self.joined = joined
        self.left = left
    }

    var viewerCount: Int { viewers.withLock { $0.count } }

    func isViewer(_ peer: Int32) -> Bool { viewers.withLock { $0.contains(peer) } }

    /// Serves on 127.0.0.1:`port` (0: a free one); returns the page's URL once listening.
    func start(port: Int) throws -> String {
        var logger = Logger(label: "webrtc-viewer")
        logger.logLevel = .critical
        do {
            let (bound, runner) = try LoopbackServer.start(router: router(), port: port, serverName: "replay-webrtc", logger: logger)
            task.withLock { $0 = runner }
            return "http://127.0.0.1:\(bound)/\(token)/"
        } catch {
            throw Failure(description: "cannot serve the viewer page: \(error)")
        }
    }

    func stop() {
        task.withLock { $0?.cancel() }
        for peer in viewers.withLock({ $0 }) { remove(peer) }
    }

    /// Ends one viewer (it left, or its connection failed).
    func remove(_ peer: Int32) {
        guard viewers.withLock({ $0.remove(peer) }) != nil else { return }
        session.remove(peer: peer)
        left(peer)
    }

    /// True when the request's path starts with this server's token.
    private func authorized(_ context: BasicRequestContext) -> Bool {
        LoopbackServer.constantTimeEqual(context.parameters.get("token") ?? "", token)
    }

    private func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get(":token") { [self] _, context -> Response in
            guard authorized(context) else { return Self.notFound() }
            return Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                                                  .init("Referrer-Policy")!: "no-referrer"],  // never nil: a valid header name
                            body: .init(byteBuffer: ByteBuffer(string: ViewerPage.html(base: "/\(token)/"))))
        }
        router.post(":token/whep") { [self] request, context -> Response in
            guard authorized(context) else { return Self.notFound() }
            guard request.headers[.contentType]?.lowercased().hasPrefix("application/sdp") == true else {
                return Self.text(.unsupportedMediaType, "Send the SDP offer as application/sdp.\n")
            }
            var body = try await request.body.collect(upTo: 64 * 1024)
            let offer = body.readString(length: body.readableBytes) ?? ""
            guard viewerCount < Self.maxViewers else {
                return Self.text(.serviceUnavailable, "Already \(Self.maxViewers) viewers; try again later.\n")
            }
            // Negotiation blocks (ICE gathering): off the server's threads.
            let session = self.session
            let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<(Int32, String), any Error>, Never>) in
                Threads.detach {
                    continuation.resume(returning: Result { try session.answer(offer) })
                }
            }
            switch outcome {
            case .success(let (peer, answer)):
                viewers.withLock { _ = $0.insert(peer) }
                joined(peer)
                return Response(status: .created, headers: [.contentType: "application/sdp", .location: "/\(token)/whep/\(peer)"],
                                body: .init(byteBuffer: ByteBuffer(string: answer)))
            case .failure(let error):
                return Self.text(.badRequest, "Cannot answer this offer: \(error)\n")
            }
        }
        router.delete(":token/whep/:peer") { [self] _, context -> Response in
            guard authorized(context), let peer = context.parameters.get("peer", as: Int32.self), isViewer(peer) else {
                return Self.notFound()
            }
            remove(peer)
            return Response(status: .ok)
        }
        router.patch(":token/whep/:peer") { [self] _, context -> Response in
            guard authorized(context) else { return Self.notFound() }
            // No trickle ICE: every candidate is in the offer and the answer.
            return Self.text(.methodNotAllowed, "Trickle ICE is not supported; send every candidate in the offer.\n")
        }
        return router
    }

    /// The same answer for a wrong token, a missing one and an unknown path or viewer.
    private static func notFound() -> Response { text(.notFound, "Not found.\n") }

    private static func text(_ status: HTTPResponse.Status, _ message: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: message)))
    }
}
