@_spi(OpenReplayKitInternal) import ReplayMedia

/// The pointer as a compositor describes it beside the picture (the portal's metadata
/// cursor mode: mutter sends where it is with every frame, and its picture when the picture
/// changes), and the drawing of it into frames: the choice to show it stays ours.
///
/// Drawing keeps what the pointer covered (a save-under), so that the next picture can be
/// made from a copy of this one: the pointer's old place is put back, then it is drawn at
/// its new place. A pointer that moved over a still screen is a new picture of its own.
struct MetadataCursor {
    /// The pointer's picture: premultiplied RGBA, as mutter sends it.
    struct Sprite: Equatable {
        let width: Int, height: Int
        let hotspotX: Int, hotspotY: Int
        let pixels: [UInt8]
    }

    /// Where the hotspot is; nil until the compositor says.
    private(set) var position: (x: Int, y: Int)?
    /// nil while hidden (or before its first picture).
    private(set) var sprite: Sprite?
    /// Moved or changed since the last picture it was drawn into.
    private(set) var changed = false
    /// What the last drawing covered: its place and the I420 bytes there (Y rows, then U, then V).
    private var saved: (x: Int, y: Int, width: Int, height: Int, bytes: [UInt8])?

    /// A frame's word on the pointer: where it is, and a new picture (nil: none new, keep the
    /// last; a sprite of no size: hidden).
    mutating func update(x: Int, y: Int, newSprite: Sprite?) {
        if position.map({ $0 != (x, y) }) ?? true {
            position = (x, y)
            changed = true
        }
        if let newSprite {
            let shown = newSprite.width > 0 && newSprite.height > 0 ? newSprite : nil
            if shown != sprite {
                sprite = shown
                changed = true
            }
        }
    }

    /// The picture it was last drawn into is gone (a whole new conversion): nothing to put back.
    mutating func forgetDrawing() { saved = nil }

    /// Puts back, in `pixels` (a copy of the picture it was last drawn into), what the pointer covered.
    func restore(into pixels: PixelBuffer) {
        guard let saved, saved.x + saved.width <= pixels.width, saved.y + saved.height <= pixels.height else { return }
        var offset = 0
        saved.bytes.withUnsafeBytes { bytes in
            Self.forEachRow(of: saved, in: pixels) { row, count in
                row.copyMemory(from: bytes.baseAddress! + offset, byteCount: count)
                offset += count
            }
        }
    }

    /// Draws the pointer (if it is known and shown) into `pixels`, keeping first what it covers.
    mutating func draw(into pixels: PixelBuffer) {
        changed = false
        saved = nil
        guard let sprite, let position else { return }
        // Even edges: the chroma of 2x2 pixels is shared.
        let left = max(0, position.x - sprite.hotspotX) & ~1, top = max(0, position.y - sprite.hotspotY) & ~1
        let right = min(pixels.width, (position.x - sprite.hotspotX + sprite.width + 1) & ~1)
        let bottom = min(pixels.height, (position.y - sprite.hotspotY + sprite.height + 1) & ~1)
        guard right > left, bottom > top else { return }
        var place = (x: left, y: top, width: right - left, height: bottom - top, bytes: [UInt8]())
        Self.forEachRow(of: place, in: pixels) { row, count in
            place.bytes.append(contentsOf: UnsafeRawBufferPointer(start: row, count: count))
        }
        saved = place
        blend(sprite, originX: position.x - sprite.hotspotX, originY: position.y - sprite.hotspotY, into: pixels, within: place)
    }

    /// Premultiplied RGBA over I420 (BT.601 video range, as the rest of the picture): luma per
    /// pixel, chroma per 2x2 block with the block's mean coverage.
    private func blend(_ sprite: Sprite, originX: Int, originY: Int, into pixels: PixelBuffer,
                       within place: (x: Int, y: Int, width: Int, height: Int, bytes: [UInt8])) {
        let base = pixels.mutableBaseAddress.assumingMemoryBound(to: UInt8.self)
        let yStride = pixels.stride(ofPlane: 0), cStride = pixels.stride(ofPlane: 1)
        let uPlane = base + pixels.offset(ofPlane: 1), vPlane = base + pixels.offset(ofPlane: 2)
        /// The sprite's premultiplied red, green, blue and alpha (0...1) at a picture pixel; clear outside it.
        func texel(_ x: Int, _ y: Int) -> (r: Double, g: Double, b: Double, a: Double) {
            let sx = x - originX, sy = y - originY
            guard sx >= 0, sy >= 0, sx < sprite.width, sy < sprite.height else { return (0, 0, 0, 0) }
            let index = (sy * sprite.width + sx) * 4
            return (Double(sprite.pixels[index]), Double(sprite.pixels[index + 1]), Double(sprite.pixels[index + 2]),
                    Double(sprite.pixels[index + 3]) / 255)
        }
        for y in stride(from: place.y, to: place.y + place.height, by: 2) {
            for x in stride(from: place.x, to: place.x + place.width, by: 2) {
                var coverage = 0.0, u = 0.0, v = 0.0
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let t = texel(x + dx, y + dy)
                    coverage += t.a
                    guard t.a > 0 else { continue }
                    let luma = 16 * t.a + (65.481 * t.r + 128.553 * t.g + 24.966 * t.b) / 255
                    let pointer = base + (y + dy) * yStride + x + dx
                    pointer.pointee = UInt8(clamping: Int((Double(pointer.pointee) * (1 - t.a) + luma).rounded()))
                    u += 128 * t.a + (-37.797 * t.r - 74.203 * t.g + 112 * t.b) / 255
                    v += 128 * t.a + (112 * t.r - 93.786 * t.g - 18.214 * t.b) / 255
                }
                guard coverage > 0 else { continue }
                let chroma = y / 2 * cStride + x / 2
                let a = coverage / 4
                uPlane[chroma] = UInt8(clamping: Int((Double(uPlane[chroma]) * (1 - a) + u / 4).rounded()))
                vPlane[chroma] = UInt8(clamping: Int((Double(vPlane[chroma]) * (1 - a) + v / 4).rounded()))
            }
        }
    }

    /// Every row of a place, in Y then U then V: its start in `pixels` and its length.
    private static func forEachRow(of place: (x: Int, y: Int, width: Int, height: Int, bytes: [UInt8]), in pixels: PixelBuffer,
                                   _ body: (UnsafeMutableRawPointer, Int) -> Void) {
        let base = pixels.mutableBaseAddress
        for row in place.y..<(place.y + place.height) {
            body(base + row * pixels.stride(ofPlane: 0) + place.x, place.width)
        }
        for plane in 1...2 {
            for row in (place.y / 2)..<((place.y + place.height) / 2) {
                body(base + pixels.offset(ofPlane: plane) + row * pixels.stride(ofPlane: plane) + place.x / 2, place.width / 2)
            }
        }
    }
}
