import ReplayMedia
import ReplayProcessing
import Testing

@Suite struct PixelConverterTests {
    /// A BGRA image of `width` x `height` with rows padded to `stride` bytes.
    func image(width: Int, height: Int, stride: Int, pixel: (Int, Int) -> (UInt8, UInt8, UInt8)) -> [UInt8] {
        var bytes = [UInt8](repeating: 0xee, count: stride * height)
        for y in 0..<height {
            for x in 0..<width {
                let (r, g, b) = pixel(x, y)
                bytes.replaceSubrange(y * stride + x * 4..<y * stride + x * 4 + 4, with: [b, g, r, 255])
            }
        }
        return bytes
    }

    @Test func whiteAndBlackBecomeVideoRangeLuma() {
        let source = image(width: 8, height: 4, stride: 32) { x, _ in x < 4 ? (255, 255, 255) : (0, 0, 0) }
        let buffer = PixelBuffer(width: 8, height: 4)
        source.withUnsafeBytes { PixelConverter.convertBGRA($0.baseAddress!, bytesPerRow: 32, into: buffer) }
        #expect(buffer.bytes[0] == 235)
        #expect(buffer.bytes[7] == 16)
        // Grey has no colour: chroma sits at the middle.
        #expect(buffer.bytes[buffer.offset(ofPlane: 1)] == 128)
    }

    @Test func primaryColoursLandOnTheirChromaSide() {
        let red = image(width: 2, height: 2, stride: 8) { _, _ in (255, 0, 0) }
        let buffer = PixelBuffer(width: 2, height: 2)
        red.withUnsafeBytes { PixelConverter.convertBGRA($0.baseAddress!, bytesPerRow: 8, into: buffer) }
        #expect(buffer.bytes[buffer.offset(ofPlane: 2)] > 200)  // V (red difference) high
        #expect(buffer.bytes[buffer.offset(ofPlane: 1)] < 128)  // U (blue difference) low
    }

    @Test func anOddEdgeIsCroppedNotRead() {
        // 5x3 source with padded rows; the buffer is 4x2 and must ignore the last column and row.
        let source = image(width: 5, height: 3, stride: 24) { x, y in x == 4 || y == 2 ? (255, 255, 255) : (0, 0, 0) }
        let buffer = PixelBuffer(width: 4, height: 2)
        source.withUnsafeBytes { PixelConverter.convertBGRA($0.baseAddress!, bytesPerRow: 24, into: buffer) }
        #expect(buffer.bytes[0..<8].allSatisfy { $0 == 16 })
    }
}
