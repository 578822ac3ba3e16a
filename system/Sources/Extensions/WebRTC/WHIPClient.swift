import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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
    private let session: URLSession

    init(endpoint: URL, token: String?) {
        self.endpoint = endpoint
        self.token = token?.isEmpty == true ? nil : token
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 15
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
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
        var request = URLRequest(url: endpoint)
        request.httpMethod = "POST"
        request.setValue("application/sdp", forHTTPHeaderField: "Content-Type")
        request.setValue("application/sdp", forHTTPHeaderField: "Accept")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        request.httpBody = Data(offer.utf8)
        let (data, response) = try perform(request)
        let body = String(decoding: data, as: UTF8.self)
        switch response.statusCode {
        case 201:
            guard let location = response.value(forHTTPHeaderField: "Location"),
                  let resource = URL(string: location, relativeTo: response.url ?? endpoint)?.absoluteURL else {
                throw Failure.malformed(endpoint: displayEndpoint, reason: "answered 201 without a Location")
            }
            guard body.hasPrefix("v=0") else { throw Failure.malformed(endpoint: displayEndpoint, reason: "answered 201 without an SDP answer") }
            return (body, resource)
        case 401, 403:
            throw Failure.unauthorized(status: response.statusCode, endpoint: displayEndpoint)
        default:
            throw Failure.rejected(status: response.statusCode, endpoint: displayEndpoint,
                                   body: body.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// Ends the session (DELETE of its resource), waiting at most `timeout` seconds.
    @discardableResult
    func end(_ resource: URL, timeout: Double = 3) -> Int? {
        var request = URLRequest(url: resource, timeoutInterval: timeout)
        request.httpMethod = "DELETE"
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return (try? perform(request, timeout: timeout))?.1.statusCode
    }

    private func perform(_ request: URLRequest, timeout: Double = 20) throws -> (Data, HTTPURLResponse) {
        let result = Mutex<Result<(Data, HTTPURLResponse), Failure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let endpoint = displayEndpoint
        let task = session.dataTask(with: request) { data, response, error in
            let outcome: Result<(Data, HTTPURLResponse), Failure>
            if let error {
                outcome = .failure(.unreachable(endpoint: endpoint, reason: error.localizedDescription))
            } else if let http = response as? HTTPURLResponse {
                outcome = .success((data ?? Data(), http))
            } else {
                outcome = .failure(.malformed(endpoint: endpoint, reason: "gave no HTTP response"))
            }
            result.withLock { $0 = outcome }
            done.signal()
        }
        task.resume()
        if done.wait(timeout: .now() + timeout) == .timedOut {
            task.cancel()
            throw Failure.unreachable(endpoint: endpoint, reason: "no answer within \(Int(timeout)) s")
        }
        // The handler sets the result before it signals.
        guard let outcome = result.withLock({ $0 }) else {
            throw Failure.malformed(endpoint: endpoint, reason: "gave no HTTP response")
        }
        return try outcome.get()
    }
}
