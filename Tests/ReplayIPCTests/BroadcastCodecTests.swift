import ReplayIPC
import Testing

@Suite struct BroadcastCodecTests {
    let surfaces = BroadcastCodec.Surfaces(count: 5, size: 640 * 480 * 3 / 2)

    func video(surface: UInt16 = 1, width: UInt32 = 640, height: UInt32 = 480, lumaOffset: UInt64 = 0,
               matrix: BroadcastMessage.ColorMatrix = .bt601, range: BroadcastMessage.ColorRange = .video) -> BroadcastMessage {
        let luma = UInt64(width * height)
        return .video(.init(surface: surface, matrix: matrix, range: range, width: width, height: height, planes: [
            .init(offset: lumaOffset, stride: width, rows: height),
            .init(offset: lumaOffset + luma, stride: width / 2, rows: height / 2),
            .init(offset: lumaOffset + luma + luma / 4, stride: width / 2, rows: height / 2),
        ], time: 123_456_789, orientation: .left))
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
            .paused, .resumed, .finished, .ping(7), .ready, .pong(7), .release(surface: 3), .finish(error: "ingest refused the key"),
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
}
