import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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

    /// An event from the long poll.
    struct Event: @unchecked Sendable {
        // @unchecked: a JSON object from JSONSerialization, read only.
        let body: [String: Any]

        var kind: String { body["janus"] as? String ?? "" }
        var transaction: String? { body["transaction"] as? String }
        /// The plugin's data, for "event" (and "success" of synchronous requests).
        var pluginData: [String: Any]? { (body["plugindata"] as? [String: Any])?["data"] as? [String: Any] }
        var jsep: [String: Any]? { body["jsep"] as? [String: Any] }
    }

    let server: URL
    /// Where to show the server in messages: scheme, host, port and path only.
    let displayServer: String
    private let urlSession: URLSession
    private let ids = Mutex<(session: Int64, handle: Int64)?>(nil)
    private let inFlight = Mutex<[URLSessionDataTask]>([])
    private let cancelled = Atomic<Bool>(false)

    init(server: URL) {
        self.server = server
        var components = URLComponents(url: server, resolvingAgainstBaseURL: false)
        components?.query = nil
        components?.user = nil
        components?.password = nil
        displayServer = components?.string ?? server.absoluteString
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        urlSession = URLSession(configuration: configuration)
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
    func request(_ body: [String: Any], jsep: [String: Any]? = nil, timeout: Double = 20,
                 other: (Event) -> Void = { _ in }) throws(Failure) -> Event {
        guard let (session, handle) = ids.withLock({ $0 }) else { throw .sessionLost(reason: "not opened") }
        var message: [String: Any] = ["janus": "message", "body": body]
        if let jsep { message["jsep"] = jsep }
        let transaction = Self.transaction()
        let reply = try call(server.appendingPathComponent("\(session)/\(handle)"), message, transaction: transaction)
        // A synchronous request is answered at once; the others are acknowledged and answered on the poll.
        if reply.kind == "success" { return try Self.checked(reply) }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            for event in try poll(timeout: min(30, max(1, deadline.timeIntervalSinceNow))) {
                if event.transaction == transaction, event.kind == "event" { return try Self.checked(event) }
                other(event)
            }
        }
        throw .malformed(server: displayServer, reason: "did not answer \(body["request"] ?? "the request") within \(Int(timeout)) s")
    }

    /// Waits for the session's next events (at most `timeout` seconds; Janus answers a quiet
    /// poll with a keep-alive after 30 s).
    func poll(timeout: Double = 30) throws(Failure) -> [Event] {
        guard let session = ids.withLock({ $0?.session }) else { throw .sessionLost(reason: "not opened") }
        var components = URLComponents(url: server.appendingPathComponent(String(session)), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "maxev", value: "10"), URLQueryItem(name: "rid", value: Self.transaction())]
        guard let url = components?.url else { throw .malformed(server: displayServer, reason: "has no usable address") }
        var request = URLRequest(url: url, timeoutInterval: timeout + 5)
        request.httpMethod = "GET"
        let data = try perform(request, timeout: timeout + 5)
        let json = try? JSONSerialization.jsonObject(with: data)
        let events = ((json as? [[String: Any]]) ?? (json as? [String: Any]).map { [$0] } ?? []).map(Event.init)
        for event in events where event.kind == "error" {
            let error = event.body["error"] as? [String: Any]
            // 458: no such session (the server restarted, or timed the session out).
            throw .sessionLost(reason: "\(error?["reason"] ?? "error") (error \(error?["code"] ?? "?"))")
        }
        return events.filter { $0.kind != "keepalive" }
    }

    /// Destroys the session, which takes the publisher out of the room; waits at most `timeout`.
    /// Sent even after `cancel`: a session left behind would stay in the room until it timed out.
    func close(timeout: Double = 2) {
        guard let session = ids.withLock({ state in defer { state = nil }; return state?.session }) else { return }
        _ = try? call(server.appendingPathComponent(String(session)), ["janus": "destroy"], timeout: timeout, evenIfCancelled: true)
    }

    /// Ends every request in flight and any made later, from another thread.
    func cancel() {
        cancelled.store(true, ordering: .relaxed)
        for task in inFlight.withLock({ $0 }) { task.cancel() }
    }

    // MARK: HTTP

    private func call(_ url: URL, _ body: [String: Any], transaction: String = JanusClient.transaction(),
                      timeout: Double = 10, evenIfCancelled: Bool = false) throws(Failure) -> Event {
        var message = body
        message["transaction"] = transaction
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        guard let encoded = try? JSONSerialization.data(withJSONObject: message) else {
            throw .malformed(server: displayServer, reason: "was sent a request that is not JSON")
        }
        request.httpBody = encoded
        let data = try perform(request, timeout: timeout, evenIfCancelled: evenIfCancelled)
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw .malformed(server: displayServer, reason: "answered with something that is not a JSON object")
        }
        let reply = Event(body: object)
        if reply.kind == "error" {
            let error = object["error"] as? [String: Any]
            let code = error?["code"] as? Int ?? 0
            let reason = error?["reason"] as? String ?? "error"
            if code == 458 { throw .sessionLost(reason: "\(reason) (error 458)") }
            throw .refused(code: code, reason: reason)
        }
        return reply
    }

    private func perform(_ request: URLRequest, timeout: Double, evenIfCancelled: Bool = false) throws(Failure) -> Data {
        let cancellable = !evenIfCancelled
        if cancellable && cancelled.load(ordering: .relaxed) { throw .sessionLost(reason: "cancelled") }
        let result = Mutex<Result<Data, Failure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let server = displayServer
        let task = urlSession.dataTask(with: request) { data, response, error in
            let outcome: Result<Data, Failure>
            if let error {
                outcome = .failure(.unreachable(server: server, reason: error.localizedDescription))
            } else if let http = response as? HTTPURLResponse, http.statusCode == 200 {
                outcome = .success(data ?? Data())
            } else {
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                outcome = .failure(.malformed(server: server, reason: "answered HTTP \(status)"))
            }
            result.withLock { $0 = outcome }
            done.signal()
        }
        if cancellable { inFlight.withLock { $0.append(task) } }
        defer { inFlight.withLock { tasks in tasks.removeAll { $0 === task } } }
        task.resume()
        if done.wait(timeout: .now() + timeout) == .timedOut {
            task.cancel()
            throw .unreachable(server: server, reason: "no answer within \(Int(timeout)) s")
        }
        if cancellable && cancelled.load(ordering: .relaxed) { throw .sessionLost(reason: "cancelled") }
        // The handler sets the result before it signals.
        guard let outcome = result.withLock({ $0 }) else { throw .malformed(server: server, reason: "gave no HTTP response") }
        return try outcome.get()
    }

    /// The plugin's own refusal, in an event's data, as a failure.
    private static func checked(_ event: Event) throws(Failure) -> Event {
        if let data = event.pluginData, let code = data["error_code"] as? Int {
            throw .refused(code: code, reason: data["error"] as? String ?? "the VideoRoom plugin refused")
        }
        return event
    }

    private static func id(of reply: Event, server: String) throws(Failure) -> Int64 {
        guard let data = reply.body["data"] as? [String: Any], let id = (data["id"] as? NSNumber)?.int64Value else {
            throw .malformed(server: server, reason: "answered without an id")
        }
        return id
    }

    private static func transaction() -> String {
        String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }
}
