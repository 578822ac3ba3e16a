@_spi(OpenReplayKitInternal) import ReplayMedia
@_spi(OpenReplayKitInternal) import ReplayProcessing
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

    /// A screen whose damage metadata names what changed: the last picture copied, with only
    /// those parts converted, is byte for byte the new picture converted whole.
    @Test func convertingTheChangedPartsOnTheLastPictureEqualsConvertingItWhole() {
        let (width, height, stride) = (64, 48, 64 * 4 + 16)
        let before = image(width: width, height: height, stride: stride) { x, y in (UInt8(x * 4), UInt8(y * 5), 90) }
        let changed = [(x: 10, y: 6, width: 12, height: 8), (x: 40, y: 30, width: 24, height: 18)]
        let after = image(width: width, height: height, stride: stride) { x, y in
            changed.contains { x >= $0.x && x < $0.x + $0.width && y >= $0.y && y < $0.y + $0.height }
                ? (200, UInt8(x + y), 30) : (UInt8(x * 4), UInt8(y * 5), 90)
        }
        let last = PixelBuffer(width: width, height: height, format: PixelConverter.format)
        let whole = PixelBuffer(width: width, height: height, format: PixelConverter.format)
        let parts = PixelBuffer(width: width, height: height, format: PixelConverter.format)
        before.withUnsafeBytes { PixelConverter.convertBGRA($0.baseAddress!, bytesPerRow: stride, into: last) }
        after.withUnsafeBytes { PixelConverter.convertBGRA($0.baseAddress!, bytesPerRow: stride, into: whole) }
        PictureTransform.copy(last, into: parts)
        after.withUnsafeBytes { source in
            for part in changed {
                PixelConverter.convertBGRA(source.baseAddress!, bytesPerRow: stride, into: parts,
                                           x: part.x, y: part.y, width: part.width, height: part.height)
            }
        }
        #expect(Array(parts.bytes) == Array(whole.bytes))
        #expect(Array(last.bytes) != Array(whole.bytes), "the parts did change")
    }

    @Test func whiteAndBlackBecomeVideoRangeLuma() {
        let source = image(width: 8, height: 4, stride: 32) { x, _ in x < 4 ? (255, 255, 255) : (0, 0, 0) }
        let buffer = PixelBuffer(width: 8, height: 4, format: PixelConverter.format)
        source.withUnsafeBytes { PixelConverter.convertBGRA($0.baseAddress!, bytesPerRow: 32, into: buffer) }
        #expect(buffer.bytes[0] == 235)
        #expect(buffer.bytes[7] == 16)
        // Grey has no colour: chroma sits at the middle.
        #expect(buffer.bytes[buffer.offset(ofPlane: 1)] == 128)
    }

    @Test func primaryColoursLandOnTheirChromaSide() {
        let red = image(width: 2, height: 2, stride: 8) { _, _ in (255, 0, 0) }
        let buffer = PixelBuffer(width: 2, height: 2, format: PixelConverter.format)
        red.withUnsafeBytes { PixelConverter.convertBGRA($0.baseAddress!, bytesPerRow: 8, into: buffer) }
        #expect(buffer.bytes[buffer.offset(ofPlane: 2)] > 200)  // V (red difference) high
        #expect(buffer.bytes[buffer.offset(ofPlane: 1)] < 128)  // U (blue difference) low
    }

    /// Pure red's luma tells the matrix apart: BT.601 video range gives 16 + 219 × 0.299 ≈ 81,
    /// BT.709 would give 16 + 219 × 0.2126 ≈ 63. So `PixelConverter.format` is what libyuv does.
    @Test func theConversionIsBT601VideoRangeAsItsFormatSays() {
        #expect(PixelConverter.format == PictureFormat(pixelFormat: .i420, matrix: .bt601, range: .video))
        let red = image(width: 2, height: 2, stride: 8) { _, _ in (255, 0, 0) }
        let picture = red.withUnsafeBytes { PixelConverter.pictureFromBGRA($0.baseAddress!, bytesPerRow: 8, width: 2, height: 2) }
        #expect(picture.format == PixelConverter.format)
        #expect((80...83).contains(picture.bytes[0]), "red's luma is \(picture.bytes[0])")
        // The same red as R, G, B, A in memory.
        let rgba: [UInt8] = [255, 0, 0, 255, 255, 0, 0, 255, 255, 0, 0, 255, 255, 0, 0, 255]
        let fromRGBA = rgba.withUnsafeBytes { PixelConverter.pictureFromRGBA($0.baseAddress!, bytesPerRow: 8, width: 2, height: 2) }
        #expect(fromRGBA.bytes.elementsEqual(picture.bytes))
    }

    @Test func anOddEdgeIsCroppedNotRead() {
        // 5x3 source with padded rows; the buffer is 4x2 and must ignore the last column and row.
        let source = image(width: 5, height: 3, stride: 24) { x, y in x == 4 || y == 2 ? (255, 255, 255) : (0, 0, 0) }
        let buffer = PixelBuffer(width: 4, height: 2, format: PixelConverter.format)
        source.withUnsafeBytes { PixelConverter.convertBGRA($0.baseAddress!, bytesPerRow: 24, into: buffer) }
        #expect(buffer.bytes[0..<8].allSatisfy { $0 == 16 })
    }
}
