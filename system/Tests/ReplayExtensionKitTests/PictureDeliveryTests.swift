@_spi(OpenReplayKitInternal) import ReplayExtensionKit
import ReplayExtensionTesting
@_spi(OpenReplayKitInternal) import ReplayIPC
@_spi(OpenReplayKitInternal) import ReplayMedia
import ReplaySystem
import Testing

/// Keeps the pictures it is handed, as a handler that holds frames for an encoder does.
final class KeepingHandler: BroadcastSampleHandler {
    var frames: [VideoSample] = []
    var pictures: [PixelBuffer] { frames.map(\.pixels) }
    override func processSampleBuffer(_ sample: SampleBuffer) {
        if case .video(let frame) = sample { frames.append(frame) }
    }
}

/// How pictures reach a handler: in read-only memory, in the format replayd says they are in.
@Suite struct PictureDeliveryTests {
    /// The permissions ("r--s", "rw-p"…) of the mapping in /proc/self/maps that holds `address`.
    static func protection(of address: UnsafeRawPointer) throws -> String? {
        let wanted = UInt(bitPattern: address)
        let maps = try #require(ProcFS.text("/proc/self/maps"))  // Foundation stops after the first page
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            let bounds = fields[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
            if bounds.count == 2, bounds[0] <= wanted, wanted < bounds[1] { return String(fields[1]) }
        }
        return nil
    }

    /// The harness hands pictures over as replayd does: in memory no handler can write (a
    /// write through a cast pointer faults here as it would live). Checked on the mapping,
    /// not by faulting the test process.
    @Test func theHarnessesPicturesLieInReadOnlyMemory() throws {
        let handler = KeepingHandler()
        let harness = BroadcastHarness(handler)
        harness.start()
        harness.sendVideo(width: 64, height: 32, time: .zero, luma: 77)
        let picture = try #require(handler.pictures.first)
        #expect(picture.bytes[0] == 77 && picture.bytes[64 * 32 - 1] == 77)
        let protection = try #require(try Self.protection(of: picture.baseAddress))
        #expect(protection.hasPrefix("r") && !protection.contains("w"), "the picture's mapping is \(protection)")
        let lastByte = try #require(try Self.protection(of: picture.baseAddress + picture.bytes.count - 1))
        #expect(!lastByte.contains("w"), "the picture's last byte's mapping is \(lastByte)")
    }

    /// A picture of one's own (`PixelBuffer(fill:)`, `copy()`) is ordinary memory, for contrast:
    /// the check above would see a writable mapping if the harness used such memory.
    @Test func aCopyLiesInMemoryOfItsOwn() throws {
        let handler = KeepingHandler()
        let harness = BroadcastHarness(handler)
        harness.start()
        harness.sendVideo(width: 64, height: 32, time: .zero, luma: 90, format: .bt709VideoRange)
        let copy = try #require(handler.pictures.first).copy()
        #expect(copy.bytes[0] == 90 && copy.format == .bt709VideoRange)
        let protection = try #require(try Self.protection(of: copy.baseAddress))
        #expect(protection.contains("w"))
    }

    @Test(arguments: [PictureFormat.bt601VideoRange, PictureFormat(matrix: .bt709, range: .full),
                      PictureFormat(matrix: .bt601, range: .full)])
    func theHarnessDeliversThePictureFormatItWasGiven(format: PictureFormat) throws {
        let handler = KeepingHandler()
        let harness = BroadcastHarness(handler)
        harness.start()
        harness.sendVideo(width: 16, height: 8, time: .zero, format: format)
        #expect(try #require(handler.pictures.first).format == format)
    }

    @Test func theHarnessDeliversTheTimeAndOrientationItWasGiven() throws {
        let handler = KeepingHandler()
        let harness = BroadcastHarness(handler)
        harness.start()
        for orientation in Orientation.allCases {
            harness.sendVideo(width: 16, height: 8, time: MediaTime(nanoseconds: Int64(orientation.rawValue) + 5), orientation: orientation)
        }
        #expect(handler.frames.map(\.orientation) == Orientation.allCases)
        #expect(handler.frames.map(\.time.nanoseconds) == [5, 6, 7, 8])
    }

    /// What replayd sends, encoded and decoded by the wire codec, becomes a picture of the
    /// format the message names: the kit assumes nothing.
    @Test func theFormatArrivesThroughTheCodecRoundTrip() throws {
        let width = 4, height = 2, size = PixelBuffer.byteCount(width: width, height: height)
        let surface = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 64)
        defer { surface.deallocate() }
        surface.initializeMemory(as: UInt8.self, repeating: 0)
        surface[16] = 255  // the picture starts at 16: full-range white
        let sent = BroadcastMessage.VideoFrame(surface: 0, matrix: .bt709, range: .full, width: UInt32(width), height: UInt32(height),
                                               planes: [.init(offset: 16, stride: 4, rows: 2), .init(offset: 24, stride: 2, rows: 1),
                                                        .init(offset: 26, stride: 2, rows: 1)],
                                               time: 42, orientation: .left)
        let decoded = try BroadcastCodec.decode(framed: BroadcastCodec.encode(.video(sent)), surfaces: .init(count: 1, size: 64))
        guard case .video(let frame) = decoded else {
            Issue.record("decoded as \(decoded)")
            return
        }
        let sample = try ReceivedPicture.sample(of: frame, in: UnsafeRawBufferPointer(surface)) {}
        #expect(sample.pixels.format == PictureFormat(matrix: .bt709, range: .full))
        #expect(sample.pixels.width == width && sample.pixels.bytes.count == size && sample.pixels.bytes[0] == 255)
        #expect(sample.time == MediaTime(nanoseconds: 42) && sample.orientation == .left)
    }

    @Test func aLayoutThatIsNotPackedI420IsRefused() throws {
        let surface = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 64)
        defer { surface.deallocate() }
        // Rows 6 bytes apart for a 4-pixel picture: valid on the wire, not what a PixelBuffer is.
        let padded = BroadcastMessage.VideoFrame(surface: 0, matrix: .bt601, range: .video, width: 4, height: 2,
                                                 planes: [.init(offset: 0, stride: 6, rows: 2), .init(offset: 12, stride: 2, rows: 1),
                                                          .init(offset: 14, stride: 2, rows: 1)], time: 0)
        #expect(throws: BroadcastExtension.Failure.self) {
            try ReceivedPicture.sample(of: padded, in: UnsafeRawBufferPointer(surface)) {}
        }
    }
}
