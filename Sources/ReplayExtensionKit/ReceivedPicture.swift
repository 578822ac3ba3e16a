package import ReplayIPC
package import ReplayMedia

/// How a decoded `video` message becomes the handler's picture: in place in its surface (no
/// copy), read-only, in the format the message names. The kit and `BroadcastHarness` both
/// build pictures here, so a handler tested offline sees what it will see live.
package enum ReceivedPicture {
    /// The sample `frame` describes, whose bytes lie in `surface` (the whole surface, mapped
    /// read-only); `release` runs when the last reference to the picture is gone.
    package static func sample(of frame: BroadcastMessage.VideoFrame, in surface: UnsafeRawBufferPointer,
                               release: @escaping @Sendable () -> Void) throws(BroadcastExtension.Failure) -> VideoSample {
        let width = Int(frame.width), height = Int(frame.height)
        let base = frame.planes[0].offset
        let luma = UInt64(width * height)
        // ReplayMedia's pictures are tightly packed I420; that is what replayd sends. The codec
        // has checked that every plane lies inside the surface.
        guard frame.planes[0].stride == frame.width, frame.planes[1].offset == base + luma,
              frame.planes[2].offset == base + luma + luma / 4, frame.planes[1].stride == frame.width / 2,
              frame.planes[2].stride == frame.width / 2 else {
            throw BroadcastExtension.Failure(description: "video layout is not packed I420")
        }
        let region = UnsafeRawBufferPointer(rebasing: surface[Int(base)..<Int(base) + PixelBuffer.byteCount(width: width, height: height)])
        let storage = PixelStorage(borrowingReadOnly: region, release: release)
        return VideoSample(time: MediaTime(nanoseconds: frame.time),
                           pixels: PixelBuffer(width: width, height: height, format: frame.pictureFormat, storage: storage),
                           orientation: frame.orientation.media)
    }
}
