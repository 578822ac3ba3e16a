import Foundation
import ReplayIPC
import ReplaySystem
import Testing

/// The hello/welcome handshake every connection starts with: the daemon's gate, and the
/// client's side against a scripted daemon on a socket pair.
@Suite struct HandshakeTests {
    @Test func aHelloOfThisVersionIsWelcomed() {
        var gate = ClientProtocol.Gate()
        #expect(gate.admit(.hello(protocolVersion: ClientProtocol.version, client: "replay"), daemonPID: 42)
            == .answer(.welcome(protocolVersion: ClientProtocol.version, daemonPID: 42, minorVersion: ClientProtocol.minorVersion,
                                capabilities: ["unsupportedRequests", "pickerSetup", "consentPreview", "nativePicker", "trimmedExport"])))
        #expect(gate.isOpen && gate.client == "replay")
        #expect(gate.admit(.status, daemonPID: 42) == .handle)
        #expect(gate.admit(.listRecordings, daemonPID: 42) == .handle)
    }

    @Test func aHelloOfAnotherVersionIsToldBothVersions() {
        for version in [1, ClientProtocol.version + 1, 0, -3] {
            var gate = ClientProtocol.Gate()
            guard case .refuse(let code, let message) = gate.admit(.hello(protocolVersion: version, client: "old"), daemonPID: 42) else {
                Issue.record("protocol \(version) was not refused")
                continue
            }
            #expect(code == .protocolVersionMismatch)
            #expect(message.contains("replayd speaks protocol \(ClientProtocol.version)"), "\(message)")
            #expect(message.contains("this client speaks protocol \(version)"), "\(message)")
            #expect(!gate.isOpen)
        }
        #expect(ClientProtocol.mismatch(daemon: 2, client: 1)
            == "replayd speaks protocol 2 and this client speaks protocol 1; update the client or the daemon so they match")
    }

    @Test func anythingButHelloFirstIsRefused() {
        for first in MessageGoldenTests.requests where first.name != "hello" {
            var gate = ClientProtocol.Gate()
            guard case .refuse(let code, let message) = gate.admit(first, daemonPID: 42) else {
                Issue.record("\(first.name) was let through before hello")
                continue
            }
            #expect(code == .malformedRequest)
            #expect(message.contains("the first message must be hello") && message.contains(first.name), "\(message)")
        }
    }

    @Test func aSecondHelloIsOutOfOrder() {
        var gate = ClientProtocol.Gate()
        _ = gate.admit(.hello(protocolVersion: ClientProtocol.version, client: "a"), daemonPID: 42)
        guard case .refuse(let code, _) = gate.admit(.hello(protocolVersion: ClientProtocol.version, client: "a"), daemonPID: 42) else {
            Issue.record("a second hello was accepted")
            return
        }
        #expect(code == .outOfOrder)
    }

    // Growth within protocol 2 (docs/protocol.md, "Growth").

    @Test func theWelcomeSaysTheDaemonsMinorVersionAndCapabilities() {
        var gate = ClientProtocol.Gate()
        let verdict = gate.admit(ClientProtocol.hello(client: "replay"), daemonPID: 42)
        #expect(verdict == .answer(.welcome(protocolVersion: 2, daemonPID: 42, minorVersion: ClientProtocol.minorVersion,
                                            capabilities: ["unsupportedRequests", "pickerSetup", "consentPreview", "nativePicker", "trimmedExport"])))
        #expect(gate.clientMinorVersion == ClientProtocol.minorVersion && gate.clientCapabilities == [.skipsUnknownEvents])
    }

    @Test func aHelloOfALaterMinorVersionIsWelcomedAndItsUnknownCapabilitiesKept() {
        var gate = ClientProtocol.Gate()
        let verdict = gate.admit(.hello(protocolVersion: 2, client: "future", minorVersion: 9, capabilities: ["teleport"]), daemonPID: 42)
        guard case .answer(.welcome(2, 42, ClientProtocol.minorVersion, _)) = verdict else {
            Issue.record("a client of 2.9 was not welcomed: \(verdict)")
            return
        }
        #expect(gate.clientMinorVersion == 9 && gate.clientCapabilities == [ClientProtocol.Capability(rawValue: "teleport")])
    }

    @Test func anUnknownRequestIsUnsupportedForA21ClientAndMalformedForA20One() {
        var modern = ClientProtocol.Gate()
        _ = modern.admit(ClientProtocol.hello(client: "replay"), daemonPID: 42)
        guard case .reject(let code, let message) = modern.admitUnknown(name: "teleport") else {
            Issue.record("an unknown request of a 2.1 client was not answered with the connection kept")
            return
        }
        #expect(code == .unsupported && message.contains("'teleport'"), "\(message)")

        var old = ClientProtocol.Gate()
        _ = old.admit(.hello(protocolVersion: 2, client: "old"), daemonPID: 42)
        guard case .refuse(.malformedRequest, _) = old.admitUnknown(name: "teleport") else {
            Issue.record("a 2.0 client's unknown request was not refused as 2.0 refused it")
            return
        }
        var early = ClientProtocol.Gate()
        guard case .refuse(.malformedRequest, let earlyMessage) = early.admitUnknown(name: "teleport\u{1b}[2J") else {
            Issue.record("an unknown first message was not refused")
            return
        }
        #expect(earlyMessage.contains("first message must be hello") && !earlyMessage.contains("\u{1b}"), "\(earlyMessage)")
    }

    @Test func decodingTellsAnUnknownMessageFromAMalformedOne() throws {
        func decode(_ json: String) throws(ProtocolError) -> ClientProtocol.Decoded<ClientRequest> {
            try ClientProtocol.decode(ClientRequest.self, from: Array(json.utf8))
        }
        guard case .unknown("teleport") = try decode(#"{"teleport":{"to":"mars"}}"#) else {
            Issue.record("an unknown request was not recognised as one")
            return
        }
        guard case .message(.status) = try decode(#"{"status":{"verbose":true}}"#) else {
            Issue.record("an unknown field was not ignored")
            return
        }
        for malformed in [#"{"teleport":5}"#, #"{"a":{},"b":{}}"#, #"[]"#, #"{"startRecording":{}}"#, #"{"status":[]}"#, "nonsense", "{}"] {
            #expect(throws: ProtocolError.self, "\(malformed)") { try decode(malformed) }
        }
    }

    @Test func anEventOfALaterMinorVersionIsSkippedByTheClient() throws {
        let (raw, client) = try rawDaemon()
        defer { close(raw) }
        let future = Array(#"{"hologram":{"depth":3}}"#.utf8)
        let bytes = try FrameCodec.frameHead(DaemonEvent.pickerShown)
            + FrameCodec.encodeHeader(jsonLength: future.count, bodyLength: 3) + future + [1, 2, 3]
            + FrameCodec.frameHead(DaemonEvent.previewShown)
        _ = bytes.withUnsafeBytes { send(raw, $0.baseAddress, $0.count, 0) }
        #expect(try client.receive(DaemonEvent.self)?.message == .pickerShown)
        #expect(try client.receive(DaemonEvent.self)?.message == .previewShown)
    }

    @Test func aDaemonOfALaterMinorVersionWelcomesTheClient() throws {
        let (raw, client) = try rawDaemon()
        let daemon = MessageChannel(fd: raw, limits: .requests)  // reads the hello; owns `raw`
        let welcome = Array(#"{"welcome":{"protocolVersion":2,"daemonPID":77,"minorVersion":7,"capabilities":["unsupportedRequests","holograms"],"motd":"hi"}}"#.utf8)
        _ = (FrameCodec.encodeHeader(jsonLength: welcome.count, bodyLength: 0) + welcome).withUnsafeBytes { send(raw, $0.baseAddress, $0.count, 0) }
        #expect(try client.handshake(client: "test") == 77)
        #expect(client.welcome == ClientProtocol.Welcome(daemonPID: 77, minorVersion: 7,
                                                        capabilities: [.unsupportedRequests, ClientProtocol.Capability(rawValue: "holograms")]))
        // What the client said: 2.1 and its capabilities.
        let hello = try #require(try daemon.receive(ClientRequest.self)?.message)
        #expect(hello == .hello(protocolVersion: 2, client: "test", minorVersion: ClientProtocol.minorVersion, capabilities: ["skipsUnknownEvents"]))
    }

    @Test func aWelcomeOf20IsMinorVersion0WithNoCapabilities() throws {
        let (client, daemon) = try socketPair()
        try daemon.send(DaemonEvent.welcome(protocolVersion: 2, daemonPID: 5))
        #expect(try client.handshake(client: "test") == 5)
        #expect(client.welcome == ClientProtocol.Welcome(daemonPID: 5, minorVersion: 0, capabilities: []))
    }

    // The client's side: `handshake` against a daemon scripted on the other end of a socket pair.

    @Test func theClientIsWelcomedByADaemonOfItsVersion() throws {
        let (client, daemon) = try socketPair()
        let serving = Thread { Self.serveOneHello(daemon) }
        serving.start()
        #expect(try client.handshake(client: "test") == 4242)
    }

    @Test func theClientReportsTheDaemonsMismatchNamingBothVersions() throws {
        let (client, daemon) = try socketPair()
        try daemon.send(DaemonEvent.error(code: .protocolVersionMismatch, message: ClientProtocol.mismatch(daemon: 3, client: ClientProtocol.version)))
        let error = #expect(throws: HandshakeError.self) { try client.handshake(client: "test") }
        #expect(error?.description.contains("protocol 3") == true && error?.description.contains("protocol \(ClientProtocol.version)") == true,
                "\(String(describing: error))")
    }

    @Test func aProtocol1DaemonIsRecognised() throws {
        // What a protocol-1 replayd answered a request it could not read: a big-endian header.
        let (raw, client) = try rawDaemon()
        let json = Array(#"{"error":{"code":"malformedRequest","message":"message of 1107296256 bytes is over the limit of 65536"}}"#.utf8)
        let header: [UInt8] = [0, 0, UInt8(json.count >> 8), UInt8(json.count & 0xff), 0, 0, 0, 0]
        _ = (header + json).withUnsafeBytes { send(raw, $0.baseAddress, $0.count, 0) }
        let error = #expect(throws: HandshakeError.self) { try client.handshake(client: "test") }
        #expect(error == .versionMismatch(ClientProtocol.mismatch(daemon: 1, client: ClientProtocol.version)))
        close(raw)
    }

    @Test func aDaemonThatTurnsTheClientAwayIsARefusal() throws {
        let (client, daemon) = try socketPair()
        try daemon.send(DaemonEvent.error(code: .busy, message: "replayd serves at most 2048 connections at once; try again later"))
        daemon.close()
        let error = #expect(throws: HandshakeError.self) { try client.handshake(client: "test") }
        #expect(error == .refused(code: .busy, message: "replayd serves at most 2048 connections at once; try again later"))
    }

    @Test func aDaemonThatNeverAnswersTimesOut() throws {
        let (client, daemon) = try socketPair()
        let error = #expect(throws: HandshakeError.self) { try client.handshake(client: "test", timeout: 0.2) }
        #expect(error?.description.contains("did not answer hello") == true, "\(String(describing: error))")
        _ = daemon
    }

    @Test func aDaemonThatAnswersSomethingElseFails() throws {
        let (client, daemon) = try socketPair()
        try daemon.send(DaemonEvent.pickerShown)
        let error = #expect(throws: HandshakeError.self) { try client.handshake(client: "test") }
        guard case .failed? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
    }

    /// Reads one hello and answers as replayd does.
    private static func serveOneHello(_ daemon: MessageChannel) {
        guard let (request, _) = (try? daemon.receive(ClientRequest.self)) ?? nil else { return }
        var gate = ClientProtocol.Gate()
        switch gate.admit(request, daemonPID: 4242) {
        case .answer(let welcome): try? daemon.send(welcome)
        case .refuse(let code, let message), .reject(let code, let message): try? daemon.send(DaemonEvent.error(code: code, message: message))
        case .handle: break
        }
    }

    private func socketPair() throws -> (client: MessageChannel, daemon: MessageChannel) {
        var fds: [Int32] = [0, 0]
        try syscall("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) }
        return (MessageChannel(fd: fds[0], limits: .events), MessageChannel(fd: fds[1], limits: .requests))
    }

    private func rawDaemon() throws -> (raw: Int32, client: MessageChannel) {
        var fds: [Int32] = [0, 0]
        try syscall("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) }
        return (fds[1], MessageChannel(fd: fds[0], limits: .events))
    }
}
