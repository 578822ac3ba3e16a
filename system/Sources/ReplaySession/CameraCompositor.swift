import ReplayCapture
@_spi(OpenReplayKitInternal) import ReplayIPC
@_spi(OpenReplayKitInternal) import ReplayMedia
@_spi(OpenReplayKitInternal) import ReplayProcessing

/// Draws the camera's newest picture into each screen picture on its way to the movie
/// (picture-in-picture). The screen's picture is copied first, since it may be shown again
/// (a still screen's repeat) or belong to a pool that a broadcast shares.
struct CameraCompositor: CaptureOutput {
    let output: any CaptureOutput
    let camera: any CameraCapturing
    let placement: PictureInPicture
    let pool = PixelBufferPool()

    func offer(_ frame: VideoSample) -> Bool {
        let screen = frame.pixels
        guard let picture = camera.latestPicture,
              let composed = pool.take(width: screen.width, height: screen.height, format: screen.format) else {
            return output.offer(frame)
        }
        PictureTransform.copy(screen, into: composed)
        placement.draw(picture, onto: composed)
        // A new picture even on a still screen: the camera moves.
        return output.offer(VideoSample(time: frame.time, pixels: composed, orientation: frame.orientation))
    }

    func append(_ audio: AudioBuffer) { output.append(audio) }
    func formatChanged(width: Int, height: Int) { output.formatChanged(width: width, height: height) }
}

extension PictureInPicture {
    /// The request's words for the camera's place.
    init(_ overlay: CameraOverlay) {
        let corner: Corner = switch overlay.corner ?? .bottomRight {
        case .topLeft: .topLeft
        case .topRight: .topRight
        case .bottomLeft: .bottomLeft
        case .bottomRight: .bottomRight
        }
        self.init(corner: corner, widthFraction: Double(overlay.size ?? 25) / 100)
    }
}
