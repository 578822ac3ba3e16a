import FoundationEssentials
import ReplayHTTP
import ReplaySystem

/// WHIP (RFC 9725), the client side: POST the SDP offer to the endpoint with the bearer
/// token, get 201 Created with the SDP answer and the session's Location, DELETE that
/// Location to end. No trickle ICE: the offer carries every candidate.
///
/// The token goes only into the Authorization header; it is never logged or put in an error.
final class WHIPClient: Sendable {
    enum Failure: Error, CustomStringConvertible {
        case unauthorized(status: Int, endpoint: String)
        case rejected(status: Int, endpoint: String, body: String)
        case unreachable(endpoint: String, reason: String)
        case malformed(endpoint: String, reason: String)

        var description: String {
            switch self {
            case .unauthorized(let status, let endpoint):
                return "the WHIP endpoint \(endpoint) refused the token (HTTP \(status) \(status == 401 ? "Unauthorized" : "Forbidden")); "
                    + "check the token in the broadcast's setup"
            case .rejected(let status, let endpoint, let body):
                return "the WHIP endpoint \(endpoint) answered HTTP \(status)" + (body.isEmpty ? "" : ": \(body.prefix(200))")
            case .unreachable(let endpoint, let reason):
                return "cannot reach the WHIP endpoint \(endpoint): \(reason)"
            case .malformed(let endpoint, let reason):
                return "the WHIP endpoint \(endpoint) \(reason)"
            }
        }
    }

    let endpoint: URL
    private let token: String?
    private let http = HTTPClient()

    init(endpoint: URL, token: String?) {
        self.endpoint = endpoint
        self.token = token?.isEmpty == true ? nil : token
    }

    /// Where to show the endpoint in messages: scheme, host, port and path, no query (which
    /// some services use for credentials).
    var displayEndpoint: String {
        var components = URLComponents(url: endpoint, resolvingAgainstBaseURL: false)
        components?.query = nil
        components?.user = nil
        components?.password = nil
        return components?.string ?? endpoint.absoluteString
    }

    /// POSTs `offer`; returns the answer and the session's resource URL.
    func publish(offer: String) throws -> (answer: String, resource: URL) {
        let response = try perform(HTTPRequest(method: "POST", url: endpoint,
                                               headers: [HTTPField("Content-Type", "application/sdp"), HTTPField("Accept", "application/sdp")]
                                                   + authorization,
                                               body: Array(offer.utf8)))
        let body = response.text
        switch response.status {
        case 201:
            guard let location = response.header("Location"),
                  let resource = URL(string: location, relativeTo: response.url)?.absoluteURL else {
                throw Failure.malformed(endpoint: displayEndpoint, reason: "answered 201 without a Location")
            }
            guard body.hasPrefix("v=0") else { throw Failure.malformed(endpoint: displayEndpoint, reason: "answered 201 without an SDP answer") }
            return (body, resource)
        case 401, 403:
            throw Failure.unauthorized(status: response.status, endpoint: displayEndpoint)
        default:
            throw Failure.rejected(status: response.status, endpoint: displayEndpoint,
                                   body: body.trimmingWhitespace())
        }
    }

    /// Ends the session (DELETE of its resource), waiting at most `timeout` seconds.
    @discardableResult
    func end(_ resource: URL, timeout: Double = 3) -> Int? {
        (try? perform(HTTPRequest(method: "DELETE", url: resource, headers: authorization, timeout: timeout)))?.status
    }

    /// The bearer token, when there is one.
    private var authorization: [HTTPField] {
        token.map { [HTTPField("Authorization", "Bearer \($0)")] } ?? []
    }

    private func perform(_ request: HTTPRequest) throws(Failure) -> HTTPResponse {
        do throws(HTTPError) {
            return try http.send(request)
        } catch {
            let reason = error.code == .timedOut ? "no answer within \(Int(request.timeout)) s" : error.message
            throw .unreachable(endpoint: displayEndpoint, reason: reason)
        }
    }
}
