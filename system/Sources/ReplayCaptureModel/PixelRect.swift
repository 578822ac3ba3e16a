/// A rectangle of screen pixels, in root-window coordinates.
public struct PixelRect: Equatable, Sendable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var isEmpty: Bool { width <= 0 || height <= 0 }

    /// The pixels in both; empty (zero width or height) when they do not overlap.
    public func intersection(_ other: PixelRect) -> PixelRect {
        let left = max(x, other.x), top = max(y, other.y)
        let right = min(x + width, other.x + other.width), bottom = min(y + height, other.y + other.height)
        return PixelRect(x: left, y: top, width: max(0, right - left), height: max(0, bottom - top))
    }

    /// The pixels of `self` outside `other`, as up to four disjoint rectangles: the full-width
    /// bands above and below `other`, then the parts left and right of it.
    public func subtracting(_ other: PixelRect) -> [PixelRect] {
        if isEmpty { return [] }
        let cut = intersection(other)
        if cut.isEmpty { return [self] }
        let pieces = [
            PixelRect(x: x, y: y, width: width, height: cut.y - y),
            PixelRect(x: x, y: cut.y + cut.height, width: width, height: y + height - cut.y - cut.height),
            PixelRect(x: x, y: cut.y, width: cut.x - x, height: cut.height),
            PixelRect(x: cut.x + cut.width, y: cut.y, width: x + width - cut.x - cut.width, height: cut.height),
        ]
        return pieces.filter { !$0.isEmpty }
    }
}
