public import Hummingbird
import Synchronization

/// Refuses requests that did not come from a page of this server to this server by its
/// loopback name: the `Host` must be 127.0.0.1:PORT or localhost:PORT (a web page of any
/// site whose name an attacker points at 127.0.0.1, DNS rebinding, sends its own name), and
/// a POST must carry an `Origin` that names the same server (another site's form, or a
/// script that sends none, is refused: every browser sends Origin on a form's POST).
public struct LoopbackRequestGuard<Context: RequestContext>: RouterMiddleware {
    /// The port the server listens on; set once it is bound. Until then everything is refused.
    public final class Port: Sendable {
        private let value = Mutex<Int?>(nil)
        public init() {}
        public func set(_ port: Int) { value.withLock { $0 = port } }
        var current: Int? { value.withLock { $0 } }
    }

    private let port: Port

    public init(port: Port) {
        self.port = port
    }

    public func handle(_ request: Request, context: Context,
                       next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let port = port.current else { return Self.refusal(.serviceUnavailable, "The page is not ready yet.") }
        if let problem = LoopbackRequestCheck.problem(host: request.head.authority, origin: request.headers[.origin],
                                                      readsOnly: request.method == .get || request.method == .head, port: port) {
            return Self.refusal(.forbidden, problem)
        }
        return try await next(request, context)
    }

    private static func refusal(_ status: HTTPResponse.Status, _ message: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
                 body: .init(byteBuffer: ByteBuffer(string: "\(status.code) \(status.reasonPhrase): \(message)\n")))
    }
}

/// The rule `LoopbackRequestGuard` applies, on its own for tests.
public enum LoopbackRequestCheck {
    /// Why a request with this `Host` and `Origin` is refused, or nil when it may go on.
    /// - Parameter readsOnly: GET or HEAD, which change nothing and need no Origin.
    public static func problem(host: String?, origin: String?, readsOnly: Bool, port: Int) -> String? {
        let names = ["127.0.0.1:\(port)", "localhost:\(port)"]
        guard let host = host?.lowercased(), names.contains(host) else {
            return "This page answers only at http://127.0.0.1:\(port)/; the request was addressed to '\(host ?? "")'."
        }
        guard !readsOnly else { return nil }
        guard let origin else {
            return "A form sent to this page must come from the page itself, and this request said nothing of where it came from (no Origin)."
        }
        guard origin.lowercased() == "http://\(host)" else {
            return "A form sent to this page must come from the page itself, not from '\(origin)'."
        }
        return nil
    }
}
