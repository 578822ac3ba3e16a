import FoundationEssentials
import ReplayHTTP
import Synchronization

/// One session on a Janus server through its HTTP API (janus.transport.http), attached to
/// the VideoRoom plugin: requests are POSTed to the session's handle, and what the plugin
/// answers later (a join, an SDP answer, a hang-up) comes on the session's long poll
/// (`GET /janus/<session>`), which also keeps the session alive.
///
/// The room's pin and token go only into request bodies; they are never logged or put in
/// an error.
final class JanusClient: Sendable {
    /// What Janus or the way to it said no with.
    enum Failure: Error, CustomStringConvertible {
        /// The server, or the plugin, refused the request (`code` is Janus's own).
        case refused(code: Int, reason: String)
        case unreachable(server: String, reason: String)
        case malformed(server: String, reason: String)
        /// The session is gone (the server restarted or timed it out) or the call was cancelled.
        case sessionLost(reason: String)

        /// Janus's VideoRoom codes that no retry can mend: no such room (426), a wrong pin or
        /// token (433), a display name or feed the room refuses (434–436, 438).
        var isPermanent: Bool {
            if case .refused(let code, _) = self { return [426, 428, 433, 434, 435, 436, 438, 403].contains(code) }
            return false
        }

        var description: String {
            switch self {
            case .refused(let code, let reason): "Janus refused: \(reason) (error \(code))"
            case .unreachable(let server, let reason): "cannot reach the Janus server \(server): \(reason)"
            case .malformed(let server, let reason): "the Janus server \(server) \(reason)"
            case .sessionLost(let reason): "the Janus session ended: \(reason)"
            }
        }
    }

    /// An event from the long poll, or a reply.
    struct Event: Sendable {
        let body: JSON

        var kind: String { body["janus"]?.string ?? "" }
        var transaction: String? { body["transaction"]?.string }
        /// The plugin's data, for "event" (and "success" of synchronous requests).
        var pluginData: JSON? { body["plugindata"]?["data"] }
        var jsep: JSON? { body["jsep"] }
    }

    let server: URL
    /// Where to show the server in messages: scheme, host, port and path only.
    let displayServer: String
    /// The session's requests; `cancel` ends them.
    private let http = HTTPClient()
    private let ids = Mutex<(session: Int64, handle: Int64)?>(nil)

    init(server: URL) {
        self.server = server
        var components = URLComponents(url: server, resolvingAgainstBaseURL: false)
        components?.query = nil
        components?.user = nil
        components?.password = nil
        displayServer = components?.string ?? server.absoluteString
    }

    /// Creates the session and attaches the VideoRoom plugin.
    func open() throws(Failure) {
        let session = try Self.id(of: call(server, ["janus": "create"]), server: displayServer)
        let handle = try Self.id(of: call(server.appendingPathComponent(String(session)),
                                          ["janus": "attach", "plugin": "janus.plugin.videoroom"]), server: displayServer)
        ids.withLock { $0 = (session, handle) }
    }

    /// Sends `body` to the plugin (with `jsep`, an SDP offer) and waits for its answer: the
    /// event that carries the request's transaction. Other events meanwhile go to `other`.
    func request(_ body: [String: JSON], jsep: [String: JSON]? = nil, timeout: Double = 20,
                 other: (Event) -> Void = { _ in }) throws(Failure) -> Event {
        guard let (session, handle) = ids.withLock({ $0 }) else { throw .sessionLost(reason: "not opened") }
        var message: [String: JSON] = ["janus": "message", "body": .object(body)]
        if let jsep { message["jsep"] = .object(jsep) }
        let transaction = Self.transaction()
        let reply = try call(server.appendingPathComponent("\(session)/\(handle)"), message, transaction: transaction)
        // A synchronous request is answered at once; the others are acknowledged and answered on the poll.
        if reply.kind == "success" { return try Self.checked(reply) }
        let deadline = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < deadline {
            let left = (deadline - ContinuousClock.now) / .seconds(1)
            for event in try poll(timeout: min(30, max(1, left))) {
                if event.transaction == transaction, event.kind == "event" { return try Self.checked(event) }
                other(event)
            }
        }
        throw .malformed(server: displayServer, reason: "did not answer \(body["request"]?.string ?? "the request") within \(Int(timeout)) s")
    }

    /// Waits for the session's next events (at most `timeout` seconds; Janus answers a quiet
    /// poll with a keep-alive after 30 s).
    func poll(timeout: Double = 30) throws(Failure) -> [Event] {
        guard let session = ids.withLock({ $0?.session }) else { throw .sessionLost(reason: "not opened") }
        var components = URLComponents(url: server.appendingPathComponent(String(session)), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "maxev", value: "10"), URLQueryItem(name: "rid", value: Self.transaction())]
        guard let url = components?.url else { throw .malformed(server: displayServer, reason: "has no usable address") }
        let data = try perform(HTTPRequest(method: "GET", url: url, timeout: timeout + 5))
        let events: [Event]
        switch try? JSON(parsing: data) {
        case .array(let values)?: events = values.map(Event.init)
        case let value?: events = [Event(body: value)]
        case nil: events = []
        }
        for event in events where event.kind == "error" {
            let error = event.body["error"]
            // 458: no such session (the server restarted, or timed the session out).
            throw .sessionLost(reason: "\(error?["reason"] ?? "error") (error \(error?["code"] ?? "?"))")
        }
        return events.filter { $0.kind != "keepalive" }
    }

    /// Destroys the session, which takes the publisher out of the room; waits at most `timeout`.
    /// Sent even after `cancel`: a session left behind would stay in the room until it timed out.
    func close(timeout: Double = 2) {
        guard let session = ids.withLock({ state in defer { state = nil }; return state?.session }) else { return }
        _ = try? call(server.appendingPathComponent(String(session)), ["janus": "destroy"], timeout: timeout, through: HTTPClient())
    }

    /// Ends every request in flight and any made later (but `close`), from another thread.
    func cancel() {
        http.cancel()
    }

    // MARK: HTTP

    private func call(_ url: URL, _ body: [String: JSON], transaction: String = JanusClient.transaction(),
                      timeout: Double = 10, through client: HTTPClient? = nil) throws(Failure) -> Event {
        var message = body
        message["transaction"] = .string(transaction)
        let request = HTTPRequest(method: "POST", url: url, headers: [HTTPField("Content-Type", "application/json")],
                                  body: JSON.object(message).encoded, timeout: timeout)
        let data = try perform(request, through: client)
        guard let object = try? JSON(parsing: data), case .object = object else {
            throw .malformed(server: displayServer, reason: "answered with something that is not a JSON object")
        }
        let reply = Event(body: object)
        if reply.kind == "error" {
            let code = object["error"]?["code"]?.integer ?? 0
            let reason = object["error"]?["reason"]?.string ?? "error"
            if code == 458 { throw .sessionLost(reason: "\(reason) (error 458)") }
            throw .refused(code: Int(code), reason: reason)
        }
        return reply
    }

    /// The body of a 200 answer.
    private func perform(_ request: HTTPRequest, through client: HTTPClient? = nil) throws(Failure) -> [UInt8] {
        let response: HTTPResponse
        do throws(HTTPError) {
            response = try (client ?? http).send(request)
        } catch where error.code == .cancelled {
            throw .sessionLost(reason: "cancelled")
        } catch {
            throw .unreachable(server: displayServer, reason: error.message)
        }
        guard response.status == 200 else { throw .malformed(server: displayServer, reason: "answered HTTP \(response.status)") }
        return response.body
    }

    /// The plugin's own refusal, in an event's data, as a failure.
    private static func checked(_ event: Event) throws(Failure) -> Event {
        if let data = event.pluginData, let code = data["error_code"]?.integer {
            throw .refused(code: Int(code), reason: data["error"]?.string ?? "the VideoRoom plugin refused")
        }
        return event
    }

    private static func id(of reply: Event, server: String) throws(Failure) -> Int64 {
        guard let id = reply.body["data"]?["id"]?.integer else {
            throw .malformed(server: server, reason: "answered without an id")
        }
        return id
    }

    private static func transaction() -> String {
        String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }
}
