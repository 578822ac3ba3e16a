import Foundation
import NIOCore
import NIOEmbedded
@testable import ReplayDaemon
import ReplayIPC
import Testing

/// A request begun must arrive whole in time: a writer that sends half a frame and stops
/// cannot hold its connection, and its place under the caps (issue 46: 21 s, 256 connections).
/// Time is the embedded event loop's, moved by hand.
@Suite struct RequestFrameDecoderTests {
    func frame(_ request: ClientRequest) throws -> [UInt8] {
        let json = try JSONEncoder().encode(request)
        return FrameCodec.encodeHeader(jsonLength: json.count, bodyLength: 0) + [UInt8](json)
    }

    func write(_ bytes: some Collection<UInt8>, to channel: EmbeddedChannel) throws {
        var buffer = channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        try channel.writeInbound(buffer)
    }

    @Test func aRequestBegunButNotSentWholeInTimeEndsTheConnection() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(RequestFrameDecoder()))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/nonexistent")).wait()
        let request = try frame(.status)
        try write(request.prefix(5), to: channel)
        channel.embeddedEventLoop.advanceTime(by: RequestFrameDecoder.wholeWithin - .milliseconds(1))
        try channel.throwIfErrorCaught()
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect {
            try channel.throwIfErrorCaught()
        } throws: { error in
            "\(error)".contains("not sent whole within 5 s")
        }
        #expect(try channel.readInbound(as: [UInt8].self) == nil)
    }

    @Test func aRequestSentWholeInTimeIsReadAndLeavesNoDeadline() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(RequestFrameDecoder()))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/nonexistent")).wait()
        let request = try frame(.status)
        try write(request.prefix(5), to: channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        // The rest, and the first bytes of the next: its time starts now, not with the first's.
        try write(request.dropFirst(5) + request.prefix(3), to: channel)
        #expect(try channel.readInbound(as: [UInt8].self) == Array(request.dropFirst(FrameCodec.headerSize)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        try channel.throwIfErrorCaught()
        try write(request.dropFirst(3), to: channel)
        #expect(try channel.readInbound(as: [UInt8].self) != nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        try channel.throwIfErrorCaught()
    }
}
