/// Where a picture of one size goes inside a frame of another: scaled as large as fits with
/// its aspect ratio kept, centred, the rest left as black bars (top and bottom for a wider
/// picture, left and right for a narrower one).
///
/// Every edge falls on an even pixel, so that the 4:2:0 chroma planes split on the same lines.
public struct Letterbox: Equatable, Sendable {
    /// The scaled picture's left edge in the frame, in pixels (even).
    public let x: Int
    /// Its top edge, in pixels (even).
    public let y: Int
    /// Its width, in pixels (even).
    public let width: Int
    /// Its height, in pixels (even).
    public let height: Int

    /// Fits `picture` into `frame` (both even, as 4:2:0 sizes are).
    public init(picture: (width: Int, height: Int), frame: (width: Int, height: Int)) {
        let (pictureWidth, pictureHeight) = (max(1, picture.width), max(1, picture.height))
        if pictureWidth * frame.height >= pictureHeight * frame.width {
            // As wide as the frame, or wider: full width, bars above and below.
            width = frame.width
            height = min(frame.height, Self.even(Double(pictureHeight * frame.width) / Double(pictureWidth)))
        } else {
            height = frame.height
            width = min(frame.width, Self.even(Double(pictureWidth * frame.height) / Double(pictureHeight)))
        }
        x = (frame.width - width) / 2 & ~1
        y = (frame.height - height) / 2 & ~1
    }

    /// The nearest even length, at least 2.
    private static func even(_ length: Double) -> Int { max(2, Int((length / 2).rounded()) * 2) }
}
