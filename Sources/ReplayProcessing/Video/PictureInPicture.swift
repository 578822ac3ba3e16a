public import ReplayMedia

/// Where a camera's picture goes in a recording's: in a corner, as wide as a share of the
/// recording, its own shape kept, a small margin from the edges.
public struct PictureInPicture: Sendable, Equatable {
    /// A corner of the recording.
    public enum Corner: String, Sendable, CaseIterable, Codable {
        /// Top left.
        case topLeft
        /// Top right.
        case topRight
        /// Bottom left.
        case bottomLeft
        /// Bottom right.
        case bottomRight
    }

    /// Which corner the camera's picture takes.
    public var corner: Corner
    /// The camera picture's width as a share of the recording's (0.05 … 0.5).
    public var widthFraction: Double

    /// A place in `corner`, `widthFraction` of the recording wide.
    ///
    /// - Parameters:
    ///   - corner: which corner (default: bottom right, where a presenter's face usually goes).
    ///   - widthFraction: clamped to 0.05 … 0.5.
    public init(corner: Corner = .bottomRight, widthFraction: Double = 0.25) {
        self.corner = corner
        self.widthFraction = min(0.5, max(0.05, widthFraction))
    }

    /// The place of a `camera`-sized picture in a `frame`-sized one, every edge even (4:2:0);
    /// nil when it would be too small to show.
    public func place(camera: (width: Int, height: Int), in frame: (width: Int, height: Int))
        -> (x: Int, y: Int, width: Int, height: Int)? {
        guard camera.width > 0, camera.height > 0 else { return nil }
        let even = { (value: Double) in Int(value) & ~1 }
        let width = even(Double(frame.width) * widthFraction)
        let height = even(Double(width) * Double(camera.height) / Double(camera.width))
        let margin = even(Double(frame.width) * 0.02)
        guard width >= 16, height >= 16, width + 2 * margin <= frame.width, height + 2 * margin <= frame.height else { return nil }
        let left = corner == .topLeft || corner == .bottomLeft
        let top = corner == .topLeft || corner == .topRight
        return (left ? margin : frame.width - margin - width, top ? margin : frame.height - margin - height, width, height)
    }

    /// Draws `camera` scaled into its place in `frame` (memory of the caller's, not yet shared).
    @_spi(OpenReplayKitInternal) public func draw(_ camera: PixelBuffer, onto frame: PixelBuffer) {
        guard let place = place(camera: (camera.width, camera.height), in: (frame.width, frame.height)) else { return }
        PictureTransform.scale(camera, into: frame, x: place.x, y: place.y, width: place.width, height: place.height)
    }
}
