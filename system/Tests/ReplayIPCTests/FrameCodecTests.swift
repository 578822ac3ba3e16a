import Foundation
import ReplayIPC
import ReplaySystem
import Testing

@Suite struct FrameCodecTests {
    @Test func headersRoundTrip() throws {
        let header = FrameCodec.encodeHeader(jsonLength: 300, bodyLength: 70_000)
        let lengths = try FrameCodec.decodeHeader(header, limits: .events)
        #expect(lengths.json == 300 && lengths.body == 70_000)
    }

    /// Both protocols put little-endian lengths on the wire: 300 = 0x012c, 70 000 = 0x011170.
    @Test func lengthsAreLittleEndian() throws {
        #expect(FrameCodec.encodeHeader(jsonLength: 300, bodyLength: 70_000) == [0x2c, 0x01, 0, 0, 0x70, 0x11, 0x01, 0])
        let lengths = try FrameCodec.decodeHeader([0x2c, 0x01, 0, 0, 0, 0, 0, 0], limits: .requests)
        #expect(lengths.json == 300 && lengths.body == 0)
    }

    @Test func oversizedAndEmptyMessagesAreRefusedBeforeAnyAllocation() {
        #expect(throws: ProtocolError.tooLarge(0x7fff_ffff, limit: 64 * 1024 - 1)) {
            try FrameCodec.decodeHeader([0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0], limits: .requests)
        }
        #expect(throws: ProtocolError.tooLarge(1, limit: 0)) {
            try FrameCodec.decodeHeader([2, 0, 0, 0, 1, 0, 0, 0], limits: .requests)
        }
        #expect(throws: ProtocolError.emptyMessage) {
            try FrameCodec.decodeHeader([0, 0, 0, 0, 0, 0, 0, 0], limits: .requests)
        }
        #expect(throws: ProtocolError.emptyMessage) {
            try FrameCodec.decodeHeader([0, 0, 0, 0, 5, 0, 0, 0], limits: .events)
        }
        #expect(throws: ProtocolError.truncated) {
            try FrameCodec.decodeHeader([0, 0, 1], limits: .requests)
        }
    }

    /// A protocol-1 peer's big-endian header is over the limit read little-endian, whatever
    /// its length: it is named as such, not as a message too large.
    @Test func aProtocol1HeaderIsRecognised() throws {
        for length in [1, 2, 255, 256, 300, 4096, 65_535] {
            let bigEndian: [UInt8] = [0, 0, UInt8(length >> 8), UInt8(length & 0xff), 0, 0, 0, 0]
            #expect(throws: ProtocolError.protocol1Peer) { try FrameCodec.decodeHeader(bigEndian, limits: .requests) }
            #expect(throws: ProtocolError.protocol1Peer) { try FrameCodec.decodeHeader(bigEndian, limits: .handshake) }
        }
        let description = ProtocolError.protocol1Peer.description
        #expect(description.contains("protocol 1") && description.contains("protocol \(ClientProtocol.version)"))
    }

    @Test func requestsAndEventsSurviveTheWire() throws {
        let (client, server) = try socketPair()
        let request = ClientRequest.startRecording(options: RecordingOptions(duration: 12.5, fps: 60, microphone: true))
        try client.send(request)
        let received = try #require(try server.receive(ClientRequest.self))
        #expect(received.message == request)

        try server.send(DaemonEvent.exportChunk, body: [1, 2, 3])
        let event = try #require(try client.receive(DaemonEvent.self))
        #expect(event.message == .exportChunk && event.body == [1, 2, 3])
    }

    @Test func garbageIsAMalformedMessageAndAClosedPeerIsNil() throws {
        let (raw, server) = try socketPair(rawClient: true)
        let junk = Array("not json at all".utf8)
        let frame = FrameCodec.encodeHeader(jsonLength: junk.count, bodyLength: 0) + junk
        _ = frame.withUnsafeBytes { send(raw.fd, $0.baseAddress, $0.count, 0) }
        #expect(throws: ProtocolError.self) { try server.receive(ClientRequest.self) }

        let (other, listener) = try socketPair(rawClient: true)
        close(other.fd)
        #expect(try listener.receive(ClientRequest.self) == nil)
    }

    @Test func aMessageCutShortIsTruncated() throws {
        let (raw, server) = try socketPair(rawClient: true)
        let frame = FrameCodec.encodeHeader(jsonLength: 100, bodyLength: 0) + Array("{\"sta".utf8)
        _ = frame.withUnsafeBytes { send(raw.fd, $0.baseAddress, $0.count, 0) }
        shutdown(raw.fd, Int32(SHUT_WR))
        #expect(throws: ProtocolError.truncated) { try server.receive(ClientRequest.self) }
        close(raw.fd)
    }

    @Test func thePeerIsIdentifiedByTheKernel() throws {
        let (client, _) = try socketPair()
        let peer = try client.peer()
        #expect(peer.pid == getpid())
        #expect(peer.uid == getuid())
        let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(peer.executable == me)
    }

    struct RawEnd { let fd: Int32 }

    private func socketPair() throws -> (MessageChannel, MessageChannel) {
        var fds: [Int32] = [0, 0]
        try syscall("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) }
        return (MessageChannel(fd: fds[0], limits: .events), MessageChannel(fd: fds[1], limits: .requests))
    }

    private func socketPair(rawClient: Bool) throws -> (RawEnd, MessageChannel) {
        var fds: [Int32] = [0, 0]
        try syscall("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) }
        return (RawEnd(fd: fds[0]), MessageChannel(fd: fds[1], limits: .requests))
    }
}
