/// A small RGB picture made from an I420 one (Y, then U, then V, tightly packed, limited-range
/// BT.601, as captures deliver them), scaled to fit a box by picking the nearest sample: the
/// consent dialog's live view of what an app would receive. Black stays black, so what the app
/// would not see looks as it would.
public struct Thumbnail: Sendable, Equatable {
    public let width: Int
    public let height: Int
    /// Three bytes a pixel, rows of `width * 3` bytes.
    public let rgb: [UInt8]

    /// Nil when `i420` is too short for `width` × `height` or the size is empty.
    public init?(i420: UnsafeRawBufferPointer, width: Int, height: Int, fitting box: (width: Int, height: Int)) {
        let luma = width * height
        guard width > 1, height > 1, box.width > 0, box.height > 0, i420.count >= luma + 2 * ((width / 2) * (height / 2)) else { return nil }
        let scale = min(Double(box.width) / Double(width), Double(box.height) / Double(height), 1)
        let outWidth = max(1, Int(Double(width) * scale)), outHeight = max(1, Int(Double(height) * scale))
        let chromaWidth = width / 2, chromaPlane = chromaWidth * (height / 2)
        var rgb = [UInt8](repeating: 0, count: outWidth * outHeight * 3)
        for row in 0..<outHeight {
            let y = min(height - 1, row * height / outHeight)
            for column in 0..<outWidth {
                let x = min(width - 1, column * width / outWidth)
                let chroma = luma + min(height / 2 - 1, y / 2) * chromaWidth + min(chromaWidth - 1, x / 2)
                let (r, g, b) = Self.rgb(y: Int(i420[y * width + x]), u: Int(i420[chroma]), v: Int(i420[chroma + chromaPlane]))
                let out = (row * outWidth + column) * 3
                rgb[out] = r
                rgb[out + 1] = g
                rgb[out + 2] = b
            }
        }
        self.width = outWidth
        self.height = outHeight
        self.rgb = rgb
    }

    /// Limited-range BT.601 to full-range RGB, in integers (×256).
    static func rgb(y: Int, u: Int, v: Int) -> (UInt8, UInt8, UInt8) {
        let c = 298 * (y - 16), d = u - 128, e = v - 128
        func clamp(_ value: Int) -> UInt8 { UInt8(max(0, min(255, (value + 128) >> 8))) }
        return (clamp(c + 409 * e), clamp(c - 100 * d - 208 * e), clamp(c + 516 * d))
    }
}
