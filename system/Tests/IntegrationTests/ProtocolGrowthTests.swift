import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
    /// The client protocol grows within its major version (docs/protocol.md, "Growth"): a client
    /// of 2.0, replayed byte for byte from a recording, is served as the 2.0 daemon served it,
    /// and a client of a later 2.x is welcomed, its later fields ignored and its unknown
    /// requests answered with `unsupported` on a connection that stays open.
    @Suite struct ProtocolGrowth {
        /// Tests/Transcripts/client-2.0.jsonl, recorded from replayd 0.25.0 (protocol 2.0) by
        /// Tests/Transcripts/record-transcript.py.
        @Test func aRecorded20ClientTranscriptIsServedAsThe20DaemonServedIt() throws {
            let transcript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Transcripts/client-2.0.jsonl")
            let steps = try String(contentsOf: transcript, encoding: .utf8).split(separator: "\n")
                .map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            #expect(steps.count == 19)

            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            try fixture.startDaemon()
            let connection = try WireConnection(socket: fixture.socket)
            for (index, step) in steps.enumerated() {
                if let request = step["send"] {
                    try connection.send(JSONSerialization.data(withJSONObject: request))
                } else if let expected = step["receive"] {
                    let answer = try #require(try connection.receive(), "step \(index + 1): the daemon closed instead of answering")
                    if let mismatch = Self.mismatch(expected: expected, actual: answer, at: "") {
                        Issue.record("step \(index + 1): \(mismatch); the daemon answered \(answer)")
                    }
                } else if step["closed"] != nil {
                    #expect(try connection.receive() == nil, "step \(index + 1): the connection was not closed")
                }
            }
            #expect(fixture.daemon?.isRunning == true)
        }

        @Test func aClientOfALater2xIsWelcomedItsLaterFieldsIgnoredAndItsUnknownRequestsUnsupported() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            try fixture.startDaemon()
            let connection = try WireConnection(socket: fixture.socket)
            try connection.send(#"{"hello":{"protocolVersion":2,"minorVersion":9,"client":"from-2.9","capabilities":["skipsUnknownEvents","holograms"],"colourScheme":"dark"}}"#)
            let welcome = try #require(try connection.receive()?["welcome"] as? [String: Any])
            #expect(welcome["protocolVersion"] as? Int == 2 && welcome["minorVersion"] as? Int == ClientProtocol.minorVersion, "\(welcome)")
            #expect((welcome["capabilities"] as? [String])?.contains("unsupportedRequests") == true, "\(welcome)")

            // Fields of a later 2.x, in a request and in a nested object, are ignored.
            try connection.send(#"{"status":{"verbose":true}}"#)
            #expect(try connection.receive()?["status"] != nil)
            try connection.send(#"{"exportRecording":{"id":"rec-20000101-000000-0000","container":"mp4","resumeAt":1024}}"#)
            #expect(Self.errorCode(try connection.receive()) == "notPermitted")

            // A request of a later 2.x: unsupported, and the connection stays open.
            try connection.send(#"{"teleport":{"to":"mars"}}"#)
            let unsupported = try #require(try connection.receive()?["error"] as? [String: Any])
            #expect(unsupported["code"] as? String == "unsupported", "\(unsupported)")
            #expect((unsupported["message"] as? String)?.contains("'teleport'") == true, "\(unsupported)")
            try connection.send(#"{"broadcastStatus":{}}"#)
            #expect(try connection.receive()?["broadcasts"] != nil)

            // Malformed IPC still gets a clear error and a closed connection.
            try connection.send(#"{"status":5}"#)
            let malformed = try connection.receive()
            #expect(Self.errorCode(malformed) == "malformedRequest", "\(String(describing: malformed))")
            #expect(try connection.receive() == nil, "the connection stayed open after malformed IPC")

            // The daemon carries on, and today's client (2.1) talks to it.
            #expect(fixture.daemon?.isRunning == true)
            #expect(try fixture.replay(["status"]).status == 0)
            #expect(fixture.daemonLog.contains("minor=9"), "the daemon's log does not name the client's minor version")
        }

        static func errorCode(_ message: [String: Any]?) -> String? {
            (message?["error"] as? [String: Any])?["code"] as? String
        }

        /// Where `actual` differs from `expected`: "*" matches any value, and an object may hold
        /// keys the expected one does not (fields a 2.0 client ignores), never fewer.
        static func mismatch(expected: Any, actual: Any, at path: String) -> String? {
            if let wildcard = expected as? String, wildcard == "*" { return nil }
            if let expected = expected as? [String: Any] {
                guard let actual = actual as? [String: Any] else { return "\(path): not an object" }
                if path.isEmpty, Set(actual.keys) != Set(expected.keys) { return "another message: \(actual.keys.sorted())" }
                for (key, value) in expected {
                    guard let other = actual[key] else { return "\(path).\(key): missing" }
                    if let mismatch = mismatch(expected: value, actual: other, at: "\(path).\(key)") { return mismatch }
                }
                return nil
            }
            if let expected = expected as? [Any] {
                guard let actual = actual as? [Any], actual.count == expected.count else { return "\(path): another list" }
                for (index, pair) in zip(expected, actual).enumerated() {
                    if let mismatch = mismatch(expected: pair.0, actual: pair.1, at: "\(path)[\(index)]") { return mismatch }
                }
                return nil
            }
            let same = (try? JSONSerialization.data(withJSONObject: [expected])) == (try? JSONSerialization.data(withJSONObject: [actual]))
            return same ? nil : "\(path): \(expected) became \(actual)"
        }
    }
}

/// A client connection spoken frame by frame, in raw JSON: what any client of any version sends.
private final class WireConnection {
    let fd: Int32

    init(socket: String) throws {
        fd = try UnixSocket.connect(path: socket)
    }

    deinit { close(fd) }

    func send(_ json: String) throws { try send(Data(json.utf8)) }

    func send(_ json: Data) throws {
        let bytes = FrameCodec.encodeHeader(jsonLength: json.count, bodyLength: 0) + [UInt8](json)
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw SystemError(call: "send", errno: errno) }
    }

    /// The next event's JSON, or nil when the daemon closed the connection. Waits at most 20 s.
    func receive() throws -> [String: Any]? {
        guard let header = try read(FrameCodec.headerSize) else { return nil }
        let lengths = try FrameCodec.decodeHeader(header, limits: .events)
        guard let json = try read(lengths.json) else { throw ProtocolError.truncated }
        if lengths.body > 0, try read(lengths.body) == nil { throw ProtocolError.truncated }
        return try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any]
    }

    private func read(_ count: Int) throws -> [UInt8]? {
        var bytes: [UInt8] = []
        while bytes.count < count {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 20_000) == 1 else { throw SystemError(call: "poll: no answer within 20 s", errno: ETIMEDOUT) }
            var buffer = [UInt8](repeating: 0, count: count - bytes.count)
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if got <= 0 { return nil }
            bytes += buffer[..<got]
        }
        return bytes
    }
}
