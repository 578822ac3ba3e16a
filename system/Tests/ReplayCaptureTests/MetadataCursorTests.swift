@testable import ReplayCapture
import ReplayMedia
import ReplayProcessing
import Testing

/// The pointer from the portal's cursor metadata, drawn into I420 pictures by us.
@Suite struct MetadataCursorTests {
    /// A grey picture with a little texture, so that putting back is seen to be exact.
    func picture(width: Int = 64, height: Int = 48) -> PixelBuffer {
        PixelBuffer(width: width, height: height, format: PixelConverter.format) { bytes in
            for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: 90 + index % 7) }
        }
    }

    /// An opaque white square of `size` with its hotspot at 1, 1.
    func whiteSquare(_ size: Int, alpha: UInt8 = 255) -> MetadataCursor.Sprite {
        MetadataCursor.Sprite(width: size, height: size, hotspotX: 1, hotspotY: 1,
                              pixels: [UInt8](repeating: alpha, count: size * size * 4))
    }

    /// The same I420 bytes (a buffer's memory may run past its picture).
    func same(_ one: PixelBuffer, _ other: PixelBuffer) -> Bool {
        let count = PixelBuffer.byteCount(width: one.width, height: one.height)
        return one.width == other.width && one.height == other.height && one.bytes.prefix(count).elementsEqual(other.bytes.prefix(count))
    }

    func luma(_ picture: PixelBuffer, _ x: Int, _ y: Int) -> UInt8 { picture.bytes[y * picture.stride(ofPlane: 0) + x] }

    @Test func anOpaquePointerIsDrawnWithItsHotspotAtThePosition() {
        var cursor = MetadataCursor()
        cursor.update(x: 11, y: 21, newSprite: whiteSquare(8))
        let pixels = picture()
        cursor.draw(into: pixels)
        // The square covers 10...17 x 20...27: white is luma 235, chroma 128.
        #expect(luma(pixels, 10, 20) == 235 && luma(pixels, 17, 27) == 235)
        #expect(luma(pixels, 9, 20) != 235 && luma(pixels, 18, 27) != 235 && luma(pixels, 10, 28) != 235)
        #expect(pixels.bytes[pixels.offset(ofPlane: 1) + 10 * pixels.stride(ofPlane: 1) + 5] == 128)
        #expect(!cursor.changed)
    }

    @Test func halfCoverageBlendsHalfway() {
        var cursor = MetadataCursor()
        // Premultiplied: white at half coverage is 128, 128, 128, 128.
        cursor.update(x: 1, y: 1, newSprite: whiteSquare(4, alpha: 128))
        let pixels = PixelBuffer(width: 8, height: 8, format: PixelConverter.format) { $0.initializeMemory(as: UInt8.self, repeating: 16) }
        cursor.draw(into: pixels)
        // Black (16) under half of white (235): about 126.
        #expect((124...128).contains(luma(pixels, 0, 0)), "\(luma(pixels, 0, 0))")
    }

    @Test func whatThePointerCoveredIsPutBackExactly() {
        var cursor = MetadataCursor()
        cursor.update(x: 30, y: 30, newSprite: whiteSquare(9))
        let original = picture()
        let drawn = original.copy()
        cursor.draw(into: drawn)
        #expect(!same(drawn, original))
        // The next picture: a copy of the last, the pointer put back, then drawn at its new place.
        let next = drawn.copy()
        cursor.restore(into: next)
        #expect(same(next, original))
        cursor.update(x: 5, y: 5, newSprite: nil)
        #expect(cursor.changed)
        cursor.draw(into: next)
        #expect(luma(next, 30, 30) == luma(original, 30, 30) && luma(next, 5, 5) == 235)
    }

    @Test func aPointerAtTheEdgeIsClipped() {
        var cursor = MetadataCursor()
        cursor.update(x: 62, y: 46, newSprite: whiteSquare(16))
        let pixels = picture()
        cursor.draw(into: pixels)
        #expect(luma(pixels, 63, 47) == 235)
        let next = pixels.copy()
        cursor.restore(into: next)
        #expect(same(next, picture()))
    }

    @Test func aHiddenPointerOrNoNewPictureIsToldApart() {
        var cursor = MetadataCursor()
        cursor.update(x: 10, y: 10, newSprite: whiteSquare(4))
        // A frame that only says where it is keeps the picture.
        cursor.update(x: 12, y: 10, newSprite: nil)
        #expect(cursor.sprite != nil)
        // A picture of no size hides it: nothing is drawn.
        cursor.update(x: 12, y: 10, newSprite: MetadataCursor.Sprite(width: 0, height: 0, hotspotX: 0, hotspotY: 0, pixels: []))
        #expect(cursor.sprite == nil && cursor.changed)
        let pixels = picture()
        cursor.draw(into: pixels)
        #expect(same(pixels, picture()))
    }

    @Test func aWholeNewPictureHasNothingToPutBack() {
        var cursor = MetadataCursor()
        cursor.update(x: 20, y: 20, newSprite: whiteSquare(6))
        cursor.draw(into: picture())
        cursor.forgetDrawing()
        let fresh = picture()
        cursor.restore(into: fresh)
        #expect(same(fresh, picture()))
    }
}
