import CYUV
@_spi(OpenReplayKitInternal) public import ReplayMedia

/// BGRA (X11's 32-bit little-endian pixels) or RGBA (some PipeWire producers) to I420, with
/// libyuv's SIMD rows.
public enum PixelConverter {
    /// What both conversions write: libyuv's `ARGBToI420` and `ABGRToI420` use its BT.601
    /// video-range coefficients (`kYuvI601Constants`; the full-range ones are its `…ToJ420`):
    /// white becomes luma 235, black 16. Pictures to convert into are taken with this format.
    public static let format = PictureFormat.bt601VideoRange

    /// Converts the top-left `destination.width` x `destination.height` pixels of a BGRA
    /// image; a wider or taller source (an odd edge) is cropped. `destination` (of
    /// `PixelConverter.format`) is written in place: a picture of this package's, not yet shared.
    @_spi(OpenReplayKitInternal) public static func convertBGRA(_ source: UnsafeRawPointer, bytesPerRow: Int, into destination: PixelBuffer) {
        // libyuv's "ARGB" is B, G, R, A in memory: exactly X11's little-endian 32-bit pixels.
        convert(source, bytesPerRow: bytesPerRow, into: destination, with: ARGBToI420)
    }

    /// Converts the `width` x `height` pixels at `x`, `y` (all even) of a BGRA image into the
    /// same place of `destination` (at least as large), leaving the rest as it was: the
    /// changed parts of a screen, on top of a copy of its last picture.
    @_spi(OpenReplayKitInternal) public static func convertBGRA(_ source: UnsafeRawPointer, bytesPerRow: Int, into destination: PixelBuffer,
                                    x: Int, y: Int, width: Int, height: Int) {
        convert(source, bytesPerRow: bytesPerRow, into: destination, x: x, y: y, width: width, height: height, with: ARGBToI420)
    }

    /// The same for red-first pixels.
    @_spi(OpenReplayKitInternal) public static func convertRGBA(_ source: UnsafeRawPointer, bytesPerRow: Int, into destination: PixelBuffer,
                                    x: Int, y: Int, width: Int, height: Int) {
        convert(source, bytesPerRow: bytesPerRow, into: destination, x: x, y: y, width: width, height: height, with: ABGRToI420)
    }

    /// The same for red-first pixels (R, G, B, A in memory: PipeWire's RGBx/RGBA).
    @_spi(OpenReplayKitInternal) public static func convertRGBA(_ source: UnsafeRawPointer, bytesPerRow: Int, into destination: PixelBuffer) {
        // libyuv's "ABGR" is R, G, B, A in memory.
        convert(source, bytesPerRow: bytesPerRow, into: destination, with: ABGRToI420)
    }

    /// The same for YUY2 (what webcams send: Y0 U Y1 V, two bytes a pixel). It is Y'CbCr
    /// already, BT.601 video range as cameras make it, so only the chroma is subsampled.
    @_spi(OpenReplayKitInternal) public static func convertYUY2(_ source: UnsafeRawPointer, bytesPerRow: Int, into destination: PixelBuffer) {
        convert(source, bytesPerRow: bytesPerRow, into: destination, with: YUY2ToI420)
    }

    /// A new picture of the top-left `width` x `height` (even) pixels of a BGRA image whose
    /// rows are `bytesPerRow` apart, in `PixelConverter.format`.
    public static func pictureFromBGRA(_ source: UnsafeRawPointer, bytesPerRow: Int, width: Int, height: Int) -> PixelBuffer {
        let picture = PixelBuffer(width: width, height: height, format: format)
        convertBGRA(source, bytesPerRow: bytesPerRow, into: picture)
        return picture
    }

    /// The same for an RGBA image (R, G, B, A in memory).
    public static func pictureFromRGBA(_ source: UnsafeRawPointer, bytesPerRow: Int, width: Int, height: Int) -> PixelBuffer {
        let picture = PixelBuffer(width: width, height: height, format: format)
        convertRGBA(source, bytesPerRow: bytesPerRow, into: picture)
        return picture
    }

    /// A libyuv packed-32-bit-to-I420 function: source, its stride, then Y, U, V and their strides, width, height.
    private typealias ToI420 = (UnsafePointer<UInt8>?, Int32, UnsafeMutablePointer<UInt8>?, Int32, UnsafeMutablePointer<UInt8>?,
                                Int32, UnsafeMutablePointer<UInt8>?, Int32, Int32, Int32) -> Int32

    private static func convert(_ source: UnsafeRawPointer, bytesPerRow: Int, into destination: PixelBuffer, with function: ToI420) {
        convert(source, bytesPerRow: bytesPerRow, into: destination, x: 0, y: 0, width: destination.width, height: destination.height,
                with: function)
    }

    private static func convert(_ source: UnsafeRawPointer, bytesPerRow: Int, into destination: PixelBuffer,
                                x: Int, y: Int, width: Int, height: Int, with function: ToI420) {
        precondition(destination.format == format, "the conversion writes \(format), not \(destination.format)")
        precondition(x >= 0 && y >= 0 && x % 2 == 0 && y % 2 == 0 && x + width <= destination.width && y + height <= destination.height,
                     "the part must lie inside the picture, on even edges")
        let yStride = destination.stride(ofPlane: 0), cStride = destination.stride(ofPlane: 1)
        let base = destination.mutableBaseAddress.assumingMemoryBound(to: UInt8.self)
        // Only the packed 32-bit conversions are asked for a part (x > 0): four bytes a pixel.
        _ = function(
            source.assumingMemoryBound(to: UInt8.self) + y * bytesPerRow + x * 4, Int32(bytesPerRow),
            base + y * yStride + x, Int32(yStride),
            base + destination.offset(ofPlane: 1) + y / 2 * cStride + x / 2, Int32(cStride),
            base + destination.offset(ofPlane: 2) + y / 2 * cStride + x / 2, Int32(cStride), Int32(width), Int32(height))
    }
}
