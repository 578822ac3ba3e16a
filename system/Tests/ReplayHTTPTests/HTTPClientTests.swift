import FoundationEssentials
import ReplayHTTP
import ReplaySystem
import ReplayTestEvents
import Testing

/// The HTTP client (libcurl) against a real server on loopback: what it sends, what it hands
/// back, and a clear error for every way an answer can fail to come.
@Suite struct HTTPClientTests {
    /// Bounds a failing test's wait; nothing is timed by it.
    static let patience = 30.0

    /// Sends on a thread of its own, as the extensions do: `send` blocks, and Swift's
    /// cooperative threads must not.
    static func send(_ request: HTTPRequest, by client: HTTPClient = HTTPClient()) async throws -> Result<HTTPResponse, HTTPError> {
        let results = Events<Result<HTTPResponse, HTTPError>>()
        Threads.detach { results.record(Result { () throws(HTTPError) in try client.send(request) }) }
        guard let result = await results.next(within: patience) else { throw TestFailure("send did not return") }
        return result
    }

    @Test func aPostSendsItsHeadersAndBodyAndGetsTheStatusTheHeadersAndTheBody() async throws {
        try await TestHTTPServer.with { server in
            let request = HTTPRequest(method: "POST", url: server.url("/created"),
                                      headers: [HTTPField("Content-Type", "application/sdp"), HTTPField("Authorization", "Bearer t0k")],
                                      body: Array("v=0 offer".utf8))
            let response = try await Self.send(request).get()
            #expect(response.status == 201)
            #expect(response.header("location") == "/resource/7" && response.header("Content-Type") == "application/sdp")
            #expect(response.text == "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\n")
            #expect(response.url == server.url("/created"))

            let received = try #require(await server.requests.next(within: Self.patience))
            #expect(received.method == "POST" && received.path == "/created" && received.body == "v=0 offer")
            #expect(received.header("Content-Type") == "application/sdp" && received.header("Authorization") == "Bearer t0k")
            #expect(received.header("Expect") == nil)
        }
    }

    @Test func anErrorStatusIsAnAnswerWithItsBody() async throws {
        try await TestHTTPServer.with { server in
            let response = try await Self.send(HTTPRequest(method: "GET", url: server.url("/missing"))).get()
            #expect(response.status == 404 && response.text == "no such thing\n")
            let deleted = try await Self.send(HTTPRequest(method: "DELETE", url: server.url("/resource/7"))).get()
            #expect(deleted.status == 404)
            #expect(await server.requests.next(within: Self.patience)?.method == "GET")
            #expect(await server.requests.next(within: Self.patience)?.method == "DELETE")
        }
    }

    /// A 307 keeps the method and the body; the answer says where it came from, so a relative
    /// Location resolves against the right address.
    @Test func aRedirectIsFollowedWithItsBodyAndTheAnswerNamesWhereItCameFrom() async throws {
        try await TestHTTPServer.with { server in
            let response = try await Self.send(HTTPRequest(method: "POST", url: server.url("/redirect"), body: Array("offer".utf8))).get()
            #expect(response.status == 201 && response.url == server.url("/created"))
            #expect(response.header("Location") == "/resource/7")
            #expect(await server.requests.next(within: Self.patience)?.path == "/redirect")
            let followed = await server.requests.next(within: Self.patience)
            #expect(followed?.method == "POST" && followed?.path == "/created" && followed?.body == "offer")
        }
    }

    @Test func noAnswerWithinTheTimeoutIsTimedOut() async throws {
        try await TestHTTPServer.with { server in
            let result = try await Self.send(HTTPRequest(method: "GET", url: server.url("/silent"), timeout: 0.5))
            #expect(await server.requests.next(within: Self.patience)?.path == "/silent")
            guard case .failure(let error) = result else { throw TestFailure("answered: \(result)") }
            #expect(error.code == .timedOut, "\(error)")
            #expect(error.message.contains("timed out"), "\(error)")
        }
    }

    @Test func aRefusedConnectionSaysWhereItWasRefused() async throws {
        // A port that was just listening and is no longer.
        let port = try await TestHTTPServer.with { $0.port }
        let result = try await Self.send(HTTPRequest(method: "GET", url: URL(string: "http://127.0.0.1:\(port)/")!))
        guard case .failure(let error) = result else { throw TestFailure("answered: \(result)") }
        #expect(error.code == .couldNotConnect, "\(error)")
        #expect(error.description.contains("127.0.0.1") && error.description.contains("\(port)"), "\(error)")
    }

    /// https is spoken (libcurl with OpenSSL): a server that answers a TLS hello in plain
    /// HTTP fails as TLS, not as some other error.
    @Test func anHTTPSRequestToAServerWithoutTLSIsATLSFailure() async throws {
        try await TestHTTPServer.with { server in
            let result = try await Self.send(HTTPRequest(method: "GET", url: URL(string: "https://127.0.0.1:\(server.port)/missing")!))
            guard case .failure(let error) = result else { throw TestFailure("answered: \(result)") }
            #expect(error.code == .tls, "\(error)")
        }
    }

    /// What JanusClient does to its long poll: cancel from another thread ends the request in
    /// flight, and every later one before it is sent. (That it ends at once, by
    /// curl_multi_wakeup, is not seen here: libcurl's own timers wake its wait too.)
    @Test func cancelEndsTheRequestInFlightAndRefusesLaterOnes() async throws {
        try await TestHTTPServer.with { server in
            let client = HTTPClient()
            let results = Events<Result<HTTPResponse, HTTPError>>()
            Threads.detach {
                results.record(Result { () throws(HTTPError) in try client.send(HTTPRequest(method: "GET", url: server.url("/silent"), timeout: 600)) })
            }
            #expect(await server.requests.next(within: Self.patience)?.path == "/silent")
            client.cancel()
            guard case .failure(let error)? = await results.next(within: Self.patience) else { throw TestFailure("the request did not end") }
            #expect(error.code == .cancelled)

            let later = try await Self.send(HTTPRequest(method: "GET", url: server.url("/missing")), by: client)
            guard case .failure(let refused) = later else { throw TestFailure("sent after cancel: \(later)") }
            #expect(refused.code == .cancelled)
            // Another client is not affected.
            #expect(try await Self.send(HTTPRequest(method: "GET", url: server.url("/missing"))).get().status == 404)
        }
    }

    @Test func aBodyOverTheLimitIsRefused() async throws {
        try await TestHTTPServer.with { server in
            let result = try await Self.send(HTTPRequest(method: "GET", url: server.url("/large")))
            guard case .failure(let error) = result else { throw TestFailure("answered: \(result)") }
            #expect(error.code == .tooLarge, "\(error)")
        }
    }

    /// A line break in a header would smuggle another header in; the value (perhaps a token)
    /// stays out of the error.
    @Test func aHeaderWithALineBreakIsNotSentAndItsValueNotRepeated() async throws {
        let request = HTTPRequest(method: "GET", url: URL(string: "http://127.0.0.1:1/")!,
                                  headers: [HTTPField("Authorization", "Bearer s3cret\r\nX-Evil: 1")])
        let result = try await Self.send(request)
        guard case .failure(let error) = result else { throw TestFailure("sent: \(result)") }
        #expect(error.code == .invalidRequest && error.description.contains("Authorization") && !error.description.contains("s3cret"))
        let ftp = try await Self.send(HTTPRequest(method: "GET", url: URL(string: "ftp://127.0.0.1/")!))
        guard case .failure(let scheme) = ftp else { throw TestFailure("sent: \(ftp)") }
        #expect(scheme.code == .invalidRequest && scheme.description.contains("ftp"))
    }
}
