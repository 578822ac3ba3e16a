import CPipeWire

/// The packed 32-bit layouts the PipeWire consumer accepts, most preferred first: the BGR
/// ones are libyuv's fastest path to I420 (the same as X11's pixels), the RGB ones need its
/// ABGR rows. Anything else (YUV, 10-bit) is not offered, so the producer converts or fails.
enum PixelLayout: CaseIterable, Equatable {
    case bgrx, bgra, rgbx, rgba

    var spaFormat: UInt32 {
        switch self {
        case .bgrx: SPA_VIDEO_FORMAT_BGRx.rawValue
        case .bgra: SPA_VIDEO_FORMAT_BGRA.rawValue
        case .rgbx: SPA_VIDEO_FORMAT_RGBx.rawValue
        case .rgba: SPA_VIDEO_FORMAT_RGBA.rawValue
        }
    }

    init?(spaFormat: UInt32) {
        guard let layout = Self.allCases.first(where: { $0.spaFormat == spaFormat }) else { return nil }
        self = layout
    }

    /// Blue first in memory (libyuv's "ARGB"); otherwise red first ("ABGR").
    var isBlueFirst: Bool { self == .bgrx || self == .bgra }
}

/// One negotiated picture format of a stream.
struct StreamFormat: Equatable {
    let layout: PixelLayout
    let width: Int
    let height: Int

    /// The bytes between rows of a frame, or nil when a frame that says `stride` and `size`
    /// cannot hold this format's picture (a short or corrupt buffer is skipped, never read past).
    func rowBytes(stride: Int32, size: UInt32) -> Int? {
        let rowBytes = stride == 0 ? width * 4 : Int(stride)
        guard width > 0, height > 0, rowBytes >= width * 4 else { return nil }
        guard Int(size) >= rowBytes * (height - 1) + width * 4 else { return nil }
        return rowBytes
    }
}
