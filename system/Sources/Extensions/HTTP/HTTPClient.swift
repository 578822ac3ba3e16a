import CCurl
import Synchronization

/// Sends HTTP requests through libcurl (Debian's, with OpenSSL and the system's certificates):
/// http:// and https://, redirects followed (at most 5, to http or https only), no cookies,
/// no cache. What the WebRTC and VideoRoom extensions need of HTTP, without Foundation's
/// URLSession, which would load Foundation and ICU into them (issue 48).
///
/// `send` blocks the calling thread until the answer, the timeout or `cancel`: call it from a
/// thread of one's own (the extensions' handler and worker threads), never from Swift's
/// cooperative pool.
public final class HTTPClient: Sendable {
    /// The largest body taken in an answer; a larger one fails the request (`tooLarge`).
    public static let maximumBodySize = 8 << 20

    private struct State {
        var cancelled = false
        var next = 0
        var inFlight: [Int: CurlTransfer.Waker] = [:]
    }

    private let state = Mutex(State())

    public init() {
        _ = Self.library
    }

    /// libcurl's global set-up, once per process before any handle (its own would not be
    /// thread-safe with every TLS library).
    private static let library: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    /// Sends `request` and waits for the whole answer. Any status is an answer; throws when
    /// there is none (see `HTTPError.Code`).
    public func send(_ request: HTTPRequest) throws(HTTPError) -> HTTPResponse {
        try request.validate()
        let transfer = try CurlTransfer(request)
        // Registered under the same lock `cancel` takes: a request either sees the
        // cancellation here or is woken by it.
        let id = try state.withLock { state throws(HTTPError) -> Int in
            guard !state.cancelled else { throw HTTPError(.cancelled, "cancelled") }
            state.next += 1
            state.inFlight[state.next] = transfer.waker
            return state.next
        }
        // Unregistered before the transfer (and its multi handle) can be freed.
        defer {
            _ = state.withLock { $0.inFlight.removeValue(forKey: id) }
            withExtendedLifetime(transfer) {}
        }
        return try transfer.run(isCancelled: { state.withLock { $0.cancelled } })
    }

    /// Ends every request in flight, and refuses every later one, with `cancelled`. From any
    /// thread; what is in flight ends at once, not at libcurl's next timer.
    public func cancel() {
        state.withLock { state in
            state.cancelled = true
            for waker in state.inFlight.values { waker.wake() }
        }
    }
}
