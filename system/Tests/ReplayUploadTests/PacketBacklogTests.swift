import ReplayCodec
@_spi(OpenReplayKitInternal) import ReplayMedia
import ReplayUpload
import Testing

/// The backlog with real packets from the real encoder: 10 fps, a keyframe every second.
@Suite struct PacketBacklogTests {
    /// `seconds` of 10 fps video (changing pictures) and 48 kHz audio, in encoding order.
    static func encodedStream(seconds: Int) throws -> [EncodedPacket] {
        let encoder = try LiveEncoder(format: LiveFormat(width: 160, height: 96, picture: .bt601VideoRange, fps: 10, videoBitRate: 200_000, keyframeSeconds: 1))
        var packets: [EncodedPacket] = []
        for index in 0..<seconds * 10 {
            let pixels = PixelBuffer(width: 160, height: 96, format: .bt601VideoRange)
            for offset in 0..<160 * 96 { pixels.mutableBytes[offset] = UInt8(truncatingIfNeeded: offset &* (index + 1)) }
            let time = MediaTime(nanoseconds: Int64(index) * 100_000_000)
            packets += try encoder.encode(pixels, at: time)
            packets += try encoder.encode(audio: [Float](repeating: 0.1, count: 4800 * 2), at: time)
        }
        return packets + (try encoder.finish())
    }

    @Test func theEncoderMakesAKeyframeEverySecondAndOnRequest() throws {
        let packets = try Self.encodedStream(seconds: 3)
        let keyframes = packets.filter { $0.track == .video && $0.isKeyframe }.map { $0.time.seconds }
        #expect(keyframes == [0, 1, 2], "\(keyframes)")
        #expect(packets.contains { $0.track == .audio })

        let encoder = try LiveEncoder(format: LiveFormat(width: 160, height: 96, picture: .bt601VideoRange, fps: 10, videoBitRate: 200_000, keyframeSeconds: 10))
        let pixels = PixelBuffer(width: 160, height: 96, format: .bt601VideoRange)
        _ = try encoder.encode(pixels, at: MediaTime(nanoseconds: 0))
        #expect(try encoder.encode(pixels, at: MediaTime(nanoseconds: 100_000_000)).allSatisfy { !$0.isKeyframe })
        encoder.requestKeyframe()
        #expect(try encoder.encode(pixels, at: MediaTime(nanoseconds: 200_000_000)).contains { $0.isKeyframe })
    }

    @Test func overTheLimitItDropsWholeGroupsFromTheOldestEnd() throws {
        let packets = try Self.encodedStream(seconds: 4)
        let total = packets.reduce(0) { $0 + $1.byteCount }
        let backlog = PacketBacklog(limitBytes: total / 2)
        backlog.append(packets)
        #expect(backlog.bufferedBytes <= total / 2)
        #expect(backlog.droppedPackets > 0)
        // What is left starts with a picture that decodes on its own.
        let first = try #require(backlog.first(timeout: 0))
        #expect(first.track == .video && first.isKeyframe, "first left: \(first.track) at \(first.time)")
        #expect(backlog.bufferedDuration.seconds < 4)
    }

    @Test func aNewConnectionStartsAtTheOldestKeyframeAndAFailedPacketIsKeptForTheNext() throws {
        let packets = try Self.encodedStream(seconds: 2)
        let backlog = PacketBacklog(limitBytes: 1 << 30)
        // From the middle of the first second: no keyframe until the second one.
        let middle = packets.firstIndex { $0.time.seconds >= 0.5 }!
        backlog.append(Array(packets[middle...]))
        #expect(backlog.startAtKeyframe())
        let first = try #require(backlog.first(timeout: 0))
        #expect(first.isKeyframe && first.time.seconds == 1)
        // Not removed until sent: the same packet again.
        #expect(backlog.first(timeout: 0) === first)
        backlog.removeFirst()
        #expect(backlog.first(timeout: 0) !== first)

        let empty = PacketBacklog(limitBytes: 1 << 20)
        empty.append(packets.filter { $0.track == .audio })
        #expect(!empty.startAtKeyframe() && empty.isEmpty)
        empty.close()
        #expect(empty.first(timeout: 5) == nil)
    }
}
