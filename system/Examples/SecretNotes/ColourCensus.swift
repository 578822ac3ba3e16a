import OpenReplayKit
import ReplayMedia

/// Counts which plain colours a captured picture shows, on a sparse grid: enough to tell
/// whose windows made it into a capture.
struct ColourCensus: Codable {
    var black = 0
    var white = 0
    var red = 0
    var green = 0
    var blue = 0
    var other = 0

    mutating func add(_ frame: CapturedFrame, step: Int = 8) {
        let pixels = frame.pixels
        let bytes = pixels.bytes
        let (yOffset, uOffset, vOffset) = (pixels.offset(ofPlane: 0), pixels.offset(ofPlane: 1), pixels.offset(ofPlane: 2))
        for row in stride(from: 0, to: pixels.height, by: step) {
            for column in stride(from: 0, to: pixels.width, by: step) {
                let luma = Double(bytes[yOffset + row * pixels.stride(ofPlane: 0) + column]) - 16
                let chroma = (row / 2) * pixels.stride(ofPlane: 1) + column / 2
                let u = Double(bytes[uOffset + chroma]) - 128, v = Double(bytes[vOffset + chroma]) - 128
                // BT.601 limited range, as libyuv writes it.
                let r = 1.164 * luma + 1.596 * v
                let g = 1.164 * luma - 0.392 * u - 0.813 * v
                let b = 1.164 * luma + 2.017 * u
                count(r: r, g: g, b: b)
            }
        }
    }

    /// The counts by colour name, as reported.
    var counts: [String: Int] {
        ["black": black, "white": white, "red": red, "green": green, "blue": blue, "other": other]
    }

    private mutating func count(r: Double, g: Double, b: Double) {
        func high(_ x: Double) -> Bool { x > 190 }
        func low(_ x: Double) -> Bool { x < 60 }
        switch (r, g, b) {
        case let (r, g, b) where low(r) && low(g) && low(b): black += 1
        case let (r, g, b) where high(r) && high(g) && high(b): white += 1
        case let (r, g, b) where high(r) && low(g) && low(b): red += 1
        case let (r, g, b) where low(r) && high(g) && low(b): green += 1
        case let (r, g, b) where low(r) && low(g) && high(b): blue += 1
        default: other += 1
        }
    }
}
