/// A planar 4:2:0 picture (I420) in memory the buffer owns.
///
/// Width and height are even: 4:2:0 chroma cannot describe an odd edge, so capture
/// drops the last column or row of an odd-sized screen rather than inventing one.
public struct PixelBuffer: Sendable {
    public let width: Int
    public let height: Int
    /// Y, then U, then V, each tightly packed (stride equals the plane's width), in one allocation.
    public var data: [UInt8]

    public init(width: Int, height: Int) {
        precondition(width > 0 && height > 0 && width % 2 == 0 && height % 2 == 0, "I420 needs even, positive sizes")
        self.width = width
        self.height = height
        let chroma = (width / 2) * (height / 2)
        data = [UInt8](repeating: 16, count: width * height) + [UInt8](repeating: 128, count: 2 * chroma)
    }

    /// Where plane 0 (Y), 1 (U) or 2 (V) starts in `data`.
    public func offset(ofPlane plane: Int) -> Int {
        let luma = width * height
        return plane == 0 ? 0 : luma + (plane - 1) * (luma / 4)
    }

    public func stride(ofPlane plane: Int) -> Int { plane == 0 ? width : width / 2 }
    public func height(ofPlane plane: Int) -> Int { plane == 0 ? height : height / 2 }
}

/// The largest even size that fits in `width` x `height`.
public func evenSize(width: Int, height: Int) -> (width: Int, height: Int) {
    (width & ~1, height & ~1)
}
