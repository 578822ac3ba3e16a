public import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A WHIP endpoint (RFC 9725) on loopback for the WebRTC tests: POST /whip with the right
/// bearer token gets 201 Created, the answer `answerer` makes (the tests hand the offer to
/// headless Chromium) and a Location; a wrong or missing token gets 401; DELETE of the
/// Location is recorded. `GET /` serves a blank page for the browser to answer from, so it
/// runs on this loopback origin.
///
/// A small blocking HTTP/1.1 server on a thread: one request per connection, bodies by
/// Content-Length, which is all a WHIP client sends.
public final class WHIPTestEndpoint: Sendable {
    public struct Request: Sendable {
        public let method: String
        public let path: String
        public let authorization: String?
        public let contentType: String?
        public let body: String
        public let status: Int
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    public let port: Int
    public let token: String
    private let listener: Int32
    private let state = Mutex(State())

    private struct State {
        var requests: [Request] = []
        var answerer: (@Sendable (String) throws -> String)?
        var stopped = false
        var sessions = 0
    }

    public var url: String { "http://127.0.0.1:\(port)/whip" }
    public var pageURL: String { "http://127.0.0.1:\(port)/" }
    public var requests: [Request] { state.withLock { $0.requests } }

    public init(token: String) throws {
        self.token = token
        do { (listener, port) = try LoopbackPort.listen() } catch {
            throw Failure(description: "cannot listen on loopback: \(error)")
        }
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "whip-test-endpoint"
        thread.start()
    }

    deinit { stop() }

    /// Who makes the SDP answer for an offer (called on the server's thread).
    public func answer(with answerer: @escaping @Sendable (String) throws -> String) {
        state.withLock { $0.answerer = answerer }
    }

    public func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        if first { shutdown(listener, Int32(SHUT_RDWR)) }
    }

    /// Waits until a request matching `matches` arrived.
    public func waitForRequest(timeout: Double = 20, _ matches: (Request) -> Bool) -> Request? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if let found = requests.first(where: matches) { return found }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return requests.first(where: matches)
    }

    private func acceptLoop() {
        defer { close(listener) }
        while !state.withLock({ $0.stopped }) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            Thread.detachNewThread { [self] in serve(client) }
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var data = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var headerEnd: Int?
        while headerEnd == nil {
            let count = read(client, &chunk, chunk.count)
            if count <= 0 { return }
            data += chunk[0..<count]
            headerEnd = Self.find([13, 10, 13, 10], in: data)
            if data.count > 64 * 1024 { return }
        }
        let head = String(decoding: data[0..<headerEnd!], as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = head.first?.split(separator: " ") ?? []
        guard requestLine.count >= 2 else { return }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        var body = Array(data[(headerEnd! + 4)...])
        while body.count < length {
            let count = read(client, &chunk, chunk.count)
            if count <= 0 { break }
            body += chunk[0..<count]
        }
        let method = String(requestLine[0]), path = String(requestLine[1])
        let text = String(decoding: body, as: UTF8.self)
        let (status, responseHeaders, responseBody) = respond(method: method, path: path, headers: headers, body: text)
        state.withLock {
            $0.requests.append(Request(method: method, path: path, authorization: headers["authorization"],
                                       contentType: headers["content-type"], body: text, status: status))
        }
        var response = "HTTP/1.1 \(status) \(Self.reason(status))\r\nConnection: close\r\nContent-Length: \(responseBody.utf8.count)\r\n"
        for (name, value) in responseHeaders { response += "\(name): \(value)\r\n" }
        response += "\r\n" + responseBody
        let bytes = Array(response.utf8)
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            offset += count
        }
    }

    private func respond(method: String, path: String, headers: [String: String], body: String)
        -> (Int, [(String, String)], String) {
        switch (method, path) {
        case ("GET", "/"):
            return (200, [("Content-Type", "text/html; charset=utf-8")], "<!doctype html><title>WHIP test endpoint</title><body></body>")
        case ("POST", "/whip"):
            guard headers["authorization"] == "Bearer \(token)" else {
                return (401, [("Content-Type", "text/plain"), ("WWW-Authenticate", "Bearer")], "unauthorized\n")
            }
            guard headers["content-type"]?.lowercased().hasPrefix("application/sdp") == true else {
                return (415, [("Content-Type", "text/plain")], "send application/sdp\n")
            }
            guard let answerer = state.withLock({ $0.answerer }) else { return (503, [], "no answerer\n") }
            do {
                let answer = try answerer(body)
                let session = state.withLock { state -> Int in
                    state.sessions += 1
                    return state.sessions
                }
                return (201, [("Content-Type", "application/sdp"), ("Location", "/whip/session/\(session)")], answer)
            } catch {
                return (400, [("Content-Type", "text/plain")], "cannot answer: \(error)\n")
            }
        case ("DELETE", _) where path.hasPrefix("/whip/session/"):
            return (200, [], "")
        default:
            return (404, [("Content-Type", "text/plain")], "not found\n")
        }
    }

    private static func reason(_ status: Int) -> String {
        [200: "OK", 201: "Created", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 415: "Unsupported Media Type",
         503: "Service Unavailable"][status] ?? "Status"
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where Array(haystack[start..<start + needle.count]) == needle { return start }
        return nil
    }
}
