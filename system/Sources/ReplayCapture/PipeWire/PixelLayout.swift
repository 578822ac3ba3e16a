import CPipeWire
@_spi(OpenReplayKitInternal) import ReplayMedia
@_spi(OpenReplayKitInternal) import ReplayProcessing

/// The picture layouts the PipeWire consumer accepts. For the screen: the packed 32-bit
/// ones, most preferred first; the BGR ones are libyuv's fastest path to I420 (the same as
/// X11's pixels), the RGB ones need its ABGR rows. A camera may also send YUY2, what nearly
/// every webcam gives uncompressed. Anything else (MJPEG, NV12, 10-bit) is not offered, so
/// the producer converts or fails.
enum PixelLayout: CaseIterable, Equatable {
    case bgrx, bgra, rgbx, rgba, yuy2

    /// What a screen cast is asked for.
    static let screen: [PixelLayout] = [.bgrx, .bgra, .rgbx, .rgba]
    /// What a camera is asked for: YUY2 first, as it is what cameras make.
    static let camera: [PixelLayout] = [.yuy2, .bgrx, .bgra, .rgbx, .rgba]

    var spaFormat: UInt32 {
        switch self {
        case .bgrx: SPA_VIDEO_FORMAT_BGRx.rawValue
        case .bgra: SPA_VIDEO_FORMAT_BGRA.rawValue
        case .rgbx: SPA_VIDEO_FORMAT_RGBx.rawValue
        case .rgba: SPA_VIDEO_FORMAT_RGBA.rawValue
        case .yuy2: SPA_VIDEO_FORMAT_YUY2.rawValue
        }
    }

    init?(spaFormat: UInt32) {
        guard let layout = Self.allCases.first(where: { $0.spaFormat == spaFormat }) else { return nil }
        self = layout
    }

    /// Blue first in memory (libyuv's "ARGB"); otherwise red first ("ABGR").
    var isBlueFirst: Bool { self == .bgrx || self == .bgra }

    var bytesPerPixel: Int { self == .yuy2 ? 2 : 4 }

    /// Converts a screen's packed 32-bit picture into `pixels` (I420), top-left aligned.
    func convert(_ data: UnsafeRawPointer, rowBytes: Int, into pixels: PixelBuffer) {
        if isBlueFirst {
            PixelConverter.convertBGRA(data, bytesPerRow: rowBytes, into: pixels)
        } else {
            PixelConverter.convertRGBA(data, bytesPerRow: rowBytes, into: pixels)
        }
    }

    /// Converts one part (even edges) into the same place of `pixels`, leaving the rest.
    func convert(_ data: UnsafeRawPointer, rowBytes: Int, into pixels: PixelBuffer, part: DamageTracker.Rect) {
        if isBlueFirst {
            PixelConverter.convertBGRA(data, bytesPerRow: rowBytes, into: pixels, x: part.x, y: part.y, width: part.width, height: part.height)
        } else {
            PixelConverter.convertRGBA(data, bytesPerRow: rowBytes, into: pixels, x: part.x, y: part.y, width: part.width, height: part.height)
        }
    }
}

/// One negotiated picture format of a stream.
struct StreamFormat: Equatable {
    let layout: PixelLayout
    let width: Int
    let height: Int

    /// The bytes between rows of a frame, or nil when a frame that says `stride` and `size`
    /// cannot hold this format's picture (a short or corrupt buffer is skipped, never read past).
    func rowBytes(stride: Int32, size: UInt32) -> Int? {
        let packed = width * layout.bytesPerPixel
        let rowBytes = stride == 0 ? packed : Int(stride)
        guard width > 0, height > 0, rowBytes >= packed else { return nil }
        guard Int(size) >= rowBytes * (height - 1) + packed else { return nil }
        return rowBytes
    }
}

/// How a producer laid a picture into its buffer, turned or mirrored (wlroots' portal sends a
/// turned output as it lies in the output's memory, with PipeWire's video-transform
/// metadata), and so what brings it upright: a mirror first, when `mirrored`, then a turn.
struct PictureTurn: Equatable {
    let upright: Orientation
    let mirrored: Bool

    static let none = PictureTurn(upright: .up, mirrored: false)

    init(upright: Orientation, mirrored: Bool) {
        self.upright = upright
        self.mirrored = mirrored
    }

    /// From SPA_META_TRANSFORMATION_*, the transformation that was applied: quarter turns
    /// counter-clockwise, after a left-right flip for the flipped ones. A turn is undone by as
    /// many clockwise; a flip then k turns by a flip then as many turns the other way.
    init(spaTransform: UInt32) {
        let quarters = Int(spaTransform % 4), flipped = spaTransform >= 4 && spaTransform < 8
        let clockwise = flipped ? (4 - quarters) % 4 : quarters
        self.init(upright: Orientation(rawValue: UInt8(clockwise))!, mirrored: flipped)
    }

    /// The upright picture's size, from the size in the buffer.
    func uprightSize(width: Int, height: Int) -> (width: Int, height: Int) {
        upright.swapsAxes ? (height, width) : (width, height)
    }
}
