import CYUV
@_spi(OpenReplayKitInternal) public import ReplayMedia

/// Scaling and rotation of I420 pictures with libyuv, into pooled memory. Each output keeps
/// its input's `PictureFormat`: these change where pixels are, never how colour is coded.
public final class PictureTransform: Sendable {
    private let pool = PixelBufferPool()

    /// A transform with a pool of its own.
    public init() {}

    /// `picture` scaled to `width` x `height`, whatever its aspect ratio; the same picture when the size matches.
    public func scale(_ picture: PixelBuffer, width: Int, height: Int) -> PixelBuffer {
        guard picture.width != width || picture.height != height,
              let output = pool.take(width: width, height: height, format: picture.format) else {
            return picture
        }
        Self.scale(picture, into: output, x: 0, y: 0, width: width, height: height)
        return output
    }

    /// `picture` fitted into a `width` x `height` frame: scaled with its aspect ratio kept,
    /// centred, black bars around it (a recording whose screen changed size keeps its own);
    /// the same picture when the size matches.
    public func fit(_ picture: PixelBuffer, width: Int, height: Int) -> PixelBuffer {
        guard picture.width != width || picture.height != height,
              let output = pool.take(width: width, height: height, format: picture.format) else {
            return picture
        }
        Self.fit(picture, into: output)
        return output
    }

    /// Fits `picture` into all of `output` (of another size): memory the caller took, such as
    /// a broadcast's shared surface.
    @_spi(OpenReplayKitInternal) public static func fit(_ picture: PixelBuffer, into output: PixelBuffer) {
        let (width, height) = (output.width, output.height)
        let place = Letterbox(picture: (picture.width, picture.height), frame: (width, height))
        // Pooled memory holds an older picture: black the bars (both pairs, as the place may
        // have changed since), then scale into the middle.
        let target = output.mutableBaseAddress.assumingMemoryBound(to: UInt8.self)
        let bars = [(0, 0, width, place.y), (0, place.y + place.height, width, height - place.y - place.height),
                    (0, place.y, place.x, place.height), (place.x + place.width, place.y, width - place.x - place.width, place.height)]
        for (x, y, barWidth, barHeight) in bars where barWidth > 0 && barHeight > 0 {
            // Black in the picture's own range.
            _ = I420Rect(target, Int32(output.stride(ofPlane: 0)), target + output.offset(ofPlane: 1), Int32(output.stride(ofPlane: 1)),
                         target + output.offset(ofPlane: 2), Int32(output.stride(ofPlane: 2)),
                         Int32(x), Int32(y), Int32(barWidth), Int32(barHeight), Int32(picture.format.blackLuma), 128, 128)
        }
        Self.scale(picture, into: output, x: place.x, y: place.y, width: place.width, height: place.height)
    }

    /// Copies all of `picture` into `output` of the same size and format.
    @_spi(OpenReplayKitInternal) public static func copy(_ picture: PixelBuffer, into output: PixelBuffer) {
        precondition(picture.width == output.width && picture.height == output.height, "a copy keeps the size")
        planeToPlane(picture, output, I420Copy)
    }

    /// A libyuv I420-to-I420 call: source planes and strides, target planes and strides, the source's size.
    private typealias PlaneCall = (UnsafePointer<UInt8>?, Int32, UnsafePointer<UInt8>?, Int32, UnsafePointer<UInt8>?, Int32,
                                   UnsafeMutablePointer<UInt8>?, Int32, UnsafeMutablePointer<UInt8>?, Int32,
                                   UnsafeMutablePointer<UInt8>?, Int32, Int32, Int32) -> Int32

    /// Calls `call` with all of `picture`'s planes as the source and `output`'s as the target.
    private static func planeToPlane(_ picture: PixelBuffer, _ output: PixelBuffer, _ call: PlaneCall) {
        let source = picture.baseAddress.assumingMemoryBound(to: UInt8.self)
        let target = output.mutableBaseAddress.assumingMemoryBound(to: UInt8.self)
        _ = call(
            source, Int32(picture.stride(ofPlane: 0)), source + picture.offset(ofPlane: 1), Int32(picture.stride(ofPlane: 1)),
            source + picture.offset(ofPlane: 2), Int32(picture.stride(ofPlane: 2)),
            target, Int32(output.stride(ofPlane: 0)), target + output.offset(ofPlane: 1), Int32(output.stride(ofPlane: 1)),
            target + output.offset(ofPlane: 2), Int32(output.stride(ofPlane: 2)), Int32(picture.width), Int32(picture.height))
    }

    /// Scales all of `picture` into a rectangle of `output` (box filter: the right one for
    /// downscaling screen content, where text must stay legible). `x` and `y` are even.
    @_spi(OpenReplayKitInternal) public static func scale(_ picture: PixelBuffer, into output: PixelBuffer, x: Int, y: Int, width: Int, height: Int) {
        let source = picture.baseAddress.assumingMemoryBound(to: UInt8.self)
        let yStride = output.stride(ofPlane: 0), uStride = output.stride(ofPlane: 1), vStride = output.stride(ofPlane: 2)
        let target = output.mutableBaseAddress.assumingMemoryBound(to: UInt8.self)
        let luma = target + y * yStride + x
        let u = target + output.offset(ofPlane: 1) + y / 2 * uStride + x / 2
        let v = target + output.offset(ofPlane: 2) + y / 2 * vStride + x / 2
        _ = I420Scale(
            source, Int32(picture.stride(ofPlane: 0)), source + picture.offset(ofPlane: 1), Int32(picture.stride(ofPlane: 1)),
            source + picture.offset(ofPlane: 2), Int32(picture.stride(ofPlane: 2)), Int32(picture.width), Int32(picture.height),
            luma, Int32(yStride), u, Int32(uStride), v, Int32(vStride), Int32(width), Int32(height), kFilterBox)
    }

    /// `picture` turned so that it is upright: what a viewer that ignores rotation tags needs.
    public func rotateUpright(_ picture: PixelBuffer, from orientation: Orientation) -> PixelBuffer {
        guard orientation != .up else { return picture }
        let (width, height) = orientation.swapsAxes ? (picture.height, picture.width) : (picture.width, picture.height)
        guard let output = pool.take(width: width, height: height, format: picture.format) else { return picture }
        Self.turnUpright(picture, from: orientation, into: output)
        return output
    }

    /// Turns all of `picture` upright into `output`, whose size is the turned one.
    @_spi(OpenReplayKitInternal) public static func turnUpright(_ picture: PixelBuffer, from orientation: Orientation, into output: PixelBuffer) {
        let mode: RotationMode = switch orientation {
        case .up: kRotate0
        case .right: kRotate90
        case .down: kRotate180
        case .left: kRotate270
        }
        planeToPlane(picture, output) { I420Rotate($0, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, mode) }
    }

    /// Mirrors all of `picture` left to right into `output` of the same size.
    @_spi(OpenReplayKitInternal) public static func mirror(_ picture: PixelBuffer, into output: PixelBuffer) {
        precondition(picture.width == output.width && picture.height == output.height, "a mirror keeps the size")
        planeToPlane(picture, output, I420Mirror)
    }
}
