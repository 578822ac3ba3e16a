@_spi(OpenReplayKitInternal) public import ReplayMedia
public import ReplaySystem
@_spi(OpenReplayKitInternal) import ReplayProcessing
import Synchronization

/// A camera that keeps its newest picture for a recording to draw in: it runs on a thread
/// of its own, at its own rate, and the recording takes whatever picture is newest when it
/// makes a frame.
public protocol CameraCapturing: AnyObject, Sendable {
    /// The newest picture (I420, even size); nil before the first.
    var latestPicture: PixelBuffer? { get }
    /// Pictures taken so far.
    var pictureCount: Int { get }
    /// Reads pictures until `stop` is raised; throws when the camera is lost.
    func run(stop: StopFlag) throws(CaptureError)
}

/// A camera through PipeWire, which serves a desktop's cameras (its V4L2 devices, and the
/// camera portal's nodes) as video source nodes. Takes YUY2, what webcams send uncompressed,
/// or packed RGB; MJPEG is not decoded.
public final class PipeWireCamera: CameraCapturing, @unchecked Sendable {
    // @unchecked: the stream is used by the thread that created it until `run`, then by `run`'s
    // alone; the picture handed out is behind a mutex.
    private let stream: PipeWireStream
    private let newest = Mutex<(picture: PixelBuffer?, count: Int)>((nil, 0))
    private let pool = PixelBufferPool()

    /// Connects to the camera node `device` (its `node.name` or serial; nil: the one the
    /// session manager picks) and waits up to `formatTimeout` seconds for it to agree on a format.
    public init(device: String?, formatTimeout: Double = 5) throws(CaptureError) {
        stream = try PipeWireStream(.camera(target: device), preferredWidth: 640, preferredHeight: 480, maxFPS: 30)
        let deadline = MonotonicClock.nanoseconds() + Int64(formatTimeout * 1e9)
        while stream.format == nil {
            guard MonotonicClock.nanoseconds() < deadline else {
                if let why = stream.whyNoFormat() {
                    throw CaptureError(.cameraUnavailable, "the camera \(device.map { "'\($0)' " } ?? "")cannot be read: \(why)")
                }
                throw CaptureError(.cameraUnavailable, device.map { "no camera named '\($0)' answered through PipeWire within \(Int(formatTimeout)) s" }
                    ?? "no camera answered through PipeWire within \(Int(formatTimeout)) s: is one connected?")
            }
            try stream.iterate(timeout: 0.1)
        }
    }

    public var latestPicture: PixelBuffer? { newest.withLock { $0.picture } }
    public var pictureCount: Int { newest.withLock { $0.count } }

    public func run(stop: StopFlag) throws(CaptureError) {
        while !stop.isRaised {
            try stream.iterate(timeout: 0.1)
            if stream.producerGone { throw CaptureError(.cameraUnavailable, "the camera went away") }
            guard stream.takeNewest() else { continue }
            let picture = stream.withHeldFrame { data, rowBytes, format -> PixelBuffer? in
                let size = evenSize(width: format.width, height: format.height)
                guard size.width >= 2, size.height >= 2,
                      let picture = pool.take(width: size.width, height: size.height, format: PixelConverter.format) else { return nil }
                switch format.layout {
                case .yuy2: PixelConverter.convertYUY2(data, bytesPerRow: rowBytes, into: picture)
                case .bgrx, .bgra: PixelConverter.convertBGRA(data, bytesPerRow: rowBytes, into: picture)
                case .rgbx, .rgba: PixelConverter.convertRGBA(data, bytesPerRow: rowBytes, into: picture)
                }
                return picture
            } ?? nil
            stream.releaseHeld()
            if let picture { newest.withLock { $0 = (picture, $0.count + 1) } }
        }
    }
}
