@_spi(OpenReplayKitInternal) import ReplayMedia
@_spi(OpenReplayKitInternal) import ReplayProcessing

/// Converts a picture that lies turned (or mirrored) in the producer's buffer into an upright
/// one: into I420 at the buffer's size first (the cheaper picture to turn), then turned into
/// the delivered picture. The in-between pictures are reused from frame to frame.
final class PictureTurner {
    private var asLaid: PixelBuffer?
    private var mirrored: PixelBuffer?

    func convertUpright(_ data: UnsafeRawPointer, rowBytes: Int, _ layout: PixelLayout, _ turn: PictureTurn, into pixels: PixelBuffer) {
        let (width, height) = turn.uprightSize(width: pixels.width, height: pixels.height)
        let laid = Self.reuse(&asLaid, width: width, height: height)
        layout.convert(data, rowBytes: rowBytes, into: laid)
        var upright = laid
        if turn.mirrored {
            upright = Self.reuse(&mirrored, width: width, height: height)
            PictureTransform.mirror(laid, into: upright)
        }
        PictureTransform.turnUpright(upright, from: turn.upright, into: pixels)
    }

    private static func reuse(_ kept: inout PixelBuffer?, width: Int, height: Int) -> PixelBuffer {
        if let picture = kept, picture.width == width, picture.height == height { return picture }
        let picture = PixelBuffer(width: width, height: height, format: PixelConverter.format)
        kept = picture
        return picture
    }
}
