import ReplayIPC
import Testing

@Suite struct BroadcastCodecTests {
    let surfaces = BroadcastCodec.Surfaces(count: 5, size: 640 * 480 * 3 / 2)

    func video(surface: UInt16 = 1, width: UInt32 = 640, height: UInt32 = 480, lumaOffset: UInt64 = 0,
               matrix: BroadcastMessage.ColorMatrix = .bt601, range: BroadcastMessage.ColorRange = .video,
               additions: BroadcastMessage.VideoFrame.Additions? = nil) -> BroadcastMessage {
        let luma = UInt64(width * height)
        return .video(.init(surface: surface, matrix: matrix, range: range, width: width, height: height, planes: [
            .init(offset: lumaOffset, stride: width, rows: height),
            .init(offset: lumaOffset + luma, stride: width / 2, rows: height / 2),
            .init(offset: lumaOffset + luma + luma / 4, stride: width / 2, rows: height / 2),
        ], time: 123_456_789, orientation: .left, additions: additions))
    }

    func roundTrip(_ message: BroadcastMessage) throws -> BroadcastMessage {
        let bytes = BroadcastCodec.encode(message)
        let length = Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16 | Int(bytes[3]) << 24
        #expect(length == bytes.count - 4)
        return try BroadcastCodec.decode(bytes[4...], surfaces: surfaces)
    }

    @Test func everyMessageSurvivesARoundTrip() throws {
        let messages: [BroadcastMessage] = [
            .hello(.init(surfaceCount: 5, surfaceSize: 4096)), .started(setupInfo: ["url": "rtmp://x/app", "key": "k"]),
            .annotated(applicationInfo: ["name": "game"]), video(), video(matrix: .bt709, range: .full),
            .audio(.init(surface: 4, source: .microphone, offset: 4096, frames: 1024, channels: 2, sampleRate: 48_000, time: -5)),
            video(additions: .init(isRepeat: true, framesDropped: 70_000)), video(additions: .init()),
            .paused, .resumed, .finished, .ping(7), .ready(), .ready(minorVersion: 1), .ready(minorVersion: 0), .pong(7), .release(surface: 3), .finish(error: "ingest refused the key"),
            .serviceInfo(["viewers": "12"]), .broadcastURL("https://example.invalid/live"),
        ]
        for message in messages { #expect(try roundTrip(message) == message) }
    }

    @Test func referencesOutsideTheSurfacesAreRefused() {
        let outside: [BroadcastMessage] = [
            video(surface: 5),                           // no such surface
            video(lumaOffset: 1),                        // the last plane ends one byte past the surface
            video(width: 1280, height: 960),             // larger than a surface
            .audio(.init(surface: 4, source: .app, offset: UInt64(640 * 480 * 3 / 2 - 100), frames: 1024, channels: 2,
                         sampleRate: 48_000, time: 0)),
            .release(surface: 9),
        ]
        for message in outside {
            #expect(throws: BroadcastCodec.DecodeError.self) { try roundTrip(message) }
        }
    }

    @Test func truncatedOrPaddedOrUnknownInputIsRefusedNotTrapped() {
        let valid = Array(BroadcastCodec.encode(video()).dropFirst(4))
        for cut in 0..<valid.count {
            #expect(throws: BroadcastCodec.DecodeError.self) { try BroadcastCodec.decode(valid[0..<cut], surfaces: surfaces) }
        }
        #expect(throws: BroadcastCodec.DecodeError.self) { try BroadcastCodec.decode(valid + [0], surfaces: surfaces) }
        #expect(throws: BroadcastCodec.DecodeError.self) { try BroadcastCodec.decode([0xee], surfaces: surfaces) }
        // The pixel format (byte 3), colour matrix (4) and range (5): a value this side does not
        // know is malformed, never guessed.
        for (field, value) in [(3, 0x7f), (4, 0), (4, 3), (5, 0), (5, 3)] as [(Int, UInt8)] {
            var unknown = valid
            unknown[field] = value
            #expect(throws: BroadcastCodec.DecodeError.self, "byte \(field) = \(value)") {
                try BroadcastCodec.decode(unknown, surfaces: surfaces)
            }
        }
        // A plane starting near 2^64, where offset + size would wrap around.
        var overflowing = valid
        overflowing.replaceSubrange(15..<23, with: [UInt8](repeating: 0xff, count: 8))
        #expect(throws: BroadcastCodec.DecodeError.self) { try BroadcastCodec.decode(overflowing, surfaces: surfaces) }
    }

    /// The `video` message byte for byte, as docs/protocol.md lays it out: a change to the wire
    /// must show up here.
    @Test func aVideoMessageHasItsDocumentedBytes() throws {
        let frame = BroadcastMessage.video(.init(surface: 1, matrix: .bt709, range: .full, width: 4, height: 2, planes: [
            .init(offset: 0, stride: 4, rows: 2), .init(offset: 8, stride: 2, rows: 1), .init(offset: 10, stride: 2, rows: 1),
        ], time: 5, orientation: .right))
        let plane: (UInt8, UInt8, UInt8) -> [UInt8] = { offset, stride, rows in
            [offset, 0, 0, 0, 0, 0, 0, 0, stride, 0, 0, 0, rows, 0, 0, 0]
        }
        let body: [UInt8] = [4, 1, 0, 1, 2, 2, 4, 0, 0, 0, 2, 0, 0, 0, 3]  // tag, surface, I420, BT.709, full, 4, 2, 3 planes
            + plane(0, 4, 2) + plane(8, 2, 1) + plane(10, 2, 1)
            + [5, 0, 0, 0, 0, 0, 0, 0, 1]                                    // time, orientation right
        #expect(BroadcastCodec.encode(frame) == [UInt8(body.count), 0, 0, 0] + body)
        #expect(try BroadcastCodec.decode(framed: [UInt8(body.count), 0, 0, 0] + body, surfaces: surfaces) == frame)
    }

    /// 1.1's `video`: the 1.0 bytes, then the flags (bit 0: a repeat) and the frames dropped so
    /// far, as docs/protocol.md lays them out; 1.0's bytes (above) still decode, with no additions.
    @Test func aOnePointOneVideoMessageHasItsDocumentedBytes() throws {
        let frame = BroadcastMessage.video(.init(surface: 1, matrix: .bt709, range: .full, width: 4, height: 2, planes: [
            .init(offset: 0, stride: 4, rows: 2), .init(offset: 8, stride: 2, rows: 1), .init(offset: 10, stride: 2, rows: 1),
        ], time: 5, orientation: .right, additions: .init(isRepeat: true, framesDropped: 258)))
        let plane: (UInt8, UInt8, UInt8) -> [UInt8] = { offset, stride, rows in
            [offset, 0, 0, 0, 0, 0, 0, 0, stride, 0, 0, 0, rows, 0, 0, 0]
        }
        let body: [UInt8] = [4, 1, 0, 1, 2, 2, 4, 0, 0, 0, 2, 0, 0, 0, 3]
            + plane(0, 4, 2) + plane(8, 2, 1) + plane(10, 2, 1)
            + [5, 0, 0, 0, 0, 0, 0, 0, 1]
            + [1, 2, 1, 0, 0]                                                // flags: repeat; 258 dropped
        #expect(BroadcastCodec.encode(frame) == [UInt8(body.count), 0, 0, 0] + body)
        #expect(try BroadcastCodec.decode(framed: [UInt8(body.count), 0, 0, 0] + body, surfaces: surfaces) == frame)
        // Cut inside the additions, or with a flag this side does not know: malformed.
        let valid = Array(body)
        for cut in valid.count - 4..<valid.count {
            #expect(throws: BroadcastCodec.DecodeError.self) { try BroadcastCodec.decode(valid[0..<cut], surfaces: surfaces) }
        }
        var unknownFlag = valid
        unknownFlag[valid.count - 5] = 0b10
        #expect(throws: BroadcastCodec.DecodeError.self) { try BroadcastCodec.decode(unknownFlag, surfaces: surfaces) }
        #expect(throws: BroadcastCodec.DecodeError.self) { try BroadcastCodec.decode(valid + [0], surfaces: surfaces) }
    }

    /// `ready`: a 1.0 extension's is the tag alone; 1.1's adds the minor version it speaks.
    @Test func readyCarriesTheMinorVersionOnlyWhenThereIsOne() throws {
        #expect(BroadcastCodec.encode(.ready()) == [1, 0, 0, 0, 20])
        #expect(BroadcastCodec.encode(.ready(minorVersion: 1)) == [3, 0, 0, 0, 20, 1, 0])
        #expect(try BroadcastCodec.decode(framed: [1, 0, 0, 0, 20], surfaces: .none) == .ready(minorVersion: nil))
        #expect(throws: BroadcastCodec.DecodeError.self) { try BroadcastCodec.decode(framed: [2, 0, 0, 0, 20, 1], surfaces: .none) }
    }

    @Test func mebibytesAreToldToATenth() {
        #expect(BroadcastLimits.mebibytes(54_386_688) == "51.9 MiB")
        #expect(BroadcastLimits.mebibytes(BroadcastLimits.memory) == "50 MiB")
        #expect(BroadcastLimits.memoryFailure(extensionID: "x", bytes: 54_386_688, breakdown: "anonymous 51.9 MiB in 1 processes")
                == "the extension 'x' used more than 50 MiB of memory (51.9 MiB: anonymous 51.9 MiB in 1 processes) and was stopped")
        #expect(BroadcastLimits.hangFailure(timeout: 5) == "the extension stopped responding (no heartbeat for 5 s) and was stopped")
    }
}
