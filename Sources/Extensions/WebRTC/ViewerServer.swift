import Foundation
import Hummingbird
import Logging
import Synchronization

/// Local viewers: on 127.0.0.1, the viewer page at `/` and a WHEP endpoint at `/whep`
/// (POST an SDP offer: 201 Created with the answer and a Location; DELETE that Location to
/// leave). Each viewer is its own send-only peer of the session.
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

    init(session: WebRTCSession, joined: @escaping @Sendable (Int32) -> Void, left: @escaping @Sendable (Int32) -> Void) {
        self.session = session
        self.joined = joined
        self.left = left
    }

    var viewerCount: Int { viewers.withLock { $0.count } }

    func isViewer(_ peer: Int32) -> Bool { viewers.withLock { $0.contains(peer) } }

    /// Serves on 127.0.0.1:`port` (0: a free one); returns the page's URL once listening.
    func start(port: Int) throws -> String {
        let bound = Mutex<Result<Int, any Error>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        var logger = Logger(label: "webrtc-viewer")
        logger.logLevel = .critical
        let app = Application(
            router: router(),
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "replay-webrtc"),
            onServerRunning: { channel in
                bound.withLock { $0 = .success(channel.localAddress?.port ?? port) }
                ready.signal()
            },
            logger: logger)
        let server = Box(app)
        let runner = Task {
            do {
                try await server.value.run()
            } catch {
                bound.withLock { if $0 == nil { $0 = .failure(error) } }
                ready.signal()
                throw error
            }
        }
        task.withLock { $0 = runner }
        if ready.wait(timeout: .now() + 10) == .timedOut { throw Failure(description: "the viewer page did not start listening") }
        switch bound.withLock({ $0 })! {
        case .success(let port): return "http://127.0.0.1:\(port)/"
        case .failure(let error): throw Failure(description: "cannot serve the viewer page on 127.0.0.1:\(port): \(error)")
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

    private func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                     body: .init(byteBuffer: ByteBuffer(string: ViewerPage.html)))
        }
        router.post("whep") { [self] request, _ -> Response in
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
                Thread.detachNewThread {
                    continuation.resume(returning: Result { try session.answer(offer) })
                }
            }
            switch outcome {
            case .success(let (peer, answer)):
                viewers.withLock { _ = $0.insert(peer) }
                joined(peer)
                return Response(status: .created, headers: [.contentType: "application/sdp", .location: "/whep/\(peer)"],
                                body: .init(byteBuffer: ByteBuffer(string: answer)))
            case .failure(let error):
                return Self.text(.badRequest, "Cannot answer this offer: \(error)\n")
            }
        }
        router.delete("whep/:peer") { [self] _, context -> Response in
            guard let peer = context.parameters.get("peer", as: Int32.self), isViewer(peer) else {
                return Self.text(.notFound, "No such viewer.\n")
            }
            remove(peer)
            return Response(status: .ok)
        }
        router.patch("whep/:peer") { _, _ -> Response in
            // No trickle ICE: every candidate is in the offer and the answer.
            Self.text(.methodNotAllowed, "Trickle ICE is not supported; send every candidate in the offer.\n")
        }
        return router
    }

    private static func text(_ status: HTTPResponse.Status, _ message: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: message)))
    }
}

private struct Box<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
