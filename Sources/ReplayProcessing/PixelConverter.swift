import CYUV
public import ReplayMedia

/// BGRA (X11's 32-bit little-endian pixels) to I420, with libyuv's SIMD rows.
public enum PixelConverter {
    /// Converts the top-left `destination.width` x `destination.height` pixels of a BGRA
    /// image; a wider or taller source (an odd edge) is cropped.
    public static func convertBGRA(
        _ source: UnsafeRawPointer, bytesPerRow: Int, into destination: PixelBuffer
    ) {
        let width = destination.width, height = destination.height
        let yStride = destination.stride(ofPlane: 0), cStride = destination.stride(ofPlane: 1)
        let base = destination.baseAddress.assumingMemoryBound(to: UInt8.self)
        // libyuv's "ARGB" is B, G, R, A in memory: exactly X11's little-endian 32-bit pixels.
        _ = ARGBToI420(
            source.assumingMemoryBound(to: UInt8.self), Int32(bytesPerRow),
            base, Int32(yStride), base + destination.offset(ofPlane: 1), Int32(cStride),
            base + destination.offset(ofPlane: 2), Int32(cStride), Int32(width), Int32(height))
    }
}
