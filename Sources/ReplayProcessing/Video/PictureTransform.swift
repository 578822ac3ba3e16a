import CYUV
public import ReplayMedia

/// Scaling and rotation of I420 pictures with libyuv, into pooled memory.
public final class PictureTransform: Sendable {
    private let pool = PixelBufferPool()

    public init() {}

    /// `picture` scaled to `width` x `height` (box filter: the right one for downscaling
    /// screen content, where text must stay legible); the same picture when the size matches.
    public func scale(_ picture: PixelBuffer, width: Int, height: Int) -> PixelBuffer {
        guard picture.width != width || picture.height != height, let output = pool.take(width: width, height: height) else {
            return picture
        }
        let source = UnsafeRawPointer(picture.baseAddress).assumingMemoryBound(to: UInt8.self)
        let target = output.baseAddress.assumingMemoryBound(to: UInt8.self)
        _ = I420Scale(
            source, Int32(picture.stride(ofPlane: 0)), source + picture.offset(ofPlane: 1), Int32(picture.stride(ofPlane: 1)),
            source + picture.offset(ofPlane: 2), Int32(picture.stride(ofPlane: 2)), Int32(picture.width), Int32(picture.height),
            target, Int32(output.stride(ofPlane: 0)), target + output.offset(ofPlane: 1), Int32(output.stride(ofPlane: 1)),
            target + output.offset(ofPlane: 2), Int32(output.stride(ofPlane: 2)), Int32(width), Int32(height), kFilterBox)
        return output
    }

    /// `picture` turned so that it is upright: what a viewer that ignores rotation tags needs.
    public func rotateUpright(_ picture: PixelBuffer, from orientation: Orientation) -> PixelBuffer {
        let mode: RotationMode
        switch orientation {
        case .up: return picture
        case .right: mode = kRotate90
        case .down: mode = kRotate180
        case .left: mode = kRotate270
        }
        let turned = orientation == .right || orientation == .left
        let (width, height) = turned ? (picture.height, picture.width) : (picture.width, picture.height)
        guard let output = pool.take(width: width, height: height) else { return picture }
        let source = UnsafeRawPointer(picture.baseAddress).assumingMemoryBound(to: UInt8.self)
        let target = output.baseAddress.assumingMemoryBound(to: UInt8.self)
        _ = I420Rotate(
            source, Int32(picture.stride(ofPlane: 0)), source + picture.offset(ofPlane: 1), Int32(picture.stride(ofPlane: 1)),
            source + picture.offset(ofPlane: 2), Int32(picture.stride(ofPlane: 2)),
            target, Int32(output.stride(ofPlane: 0)), target + output.offset(ofPlane: 1), Int32(output.stride(ofPlane: 1)),
            target + output.offset(ofPlane: 2), Int32(output.stride(ofPlane: 2)), Int32(picture.width), Int32(picture.height), mode)
        return output
    }
}
