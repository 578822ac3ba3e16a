/// How a picture's bytes are to be read: the layout of its planes, and how its Y, U and V
/// values map to colour. An encoder tags its stream with it and a shader or converter picks
/// its coefficients by it; guessing gets colours subtly wrong (BT.601 read as BT.709 shifts
/// hues) or washed out (video range shown as full range loses black and white).
public struct PictureFormat: Hashable, Sendable, CustomStringConvertible {
    /// How the samples lie in memory.
    public enum PixelFormat: Hashable, Sendable, CaseIterable {
        /// Planar 4:2:0, 8 bits: a full-size Y plane, then U and V planes of half the width
        /// and half the height, each tightly packed (stride = plane width), in one block.
        case i420
    }

    /// Which RGB ↔ Y′CbCr coefficients the colour was converted with (ITU-R recommendations).
    /// Only the matrix: the RGB itself is the screen's sRGB (BT.709 primaries, sRGB transfer)
    /// whichever matrix coded it, and encoders tag their streams so.
    public enum ColorMatrix: Hashable, Sendable, CaseIterable {
        /// BT.601 (SD television, JPEG): Y = 0.299 R + 0.587 G + 0.114 B.
        case bt601
        /// BT.709 (HD television): Y = 0.2126 R + 0.7152 G + 0.0722 B.
        case bt709
    }

    /// Which code values black and white take.
    public enum ColorRange: Hashable, Sendable, CaseIterable {
        /// Limited ("video", "TV", "MPEG") range: Y from 16 (black) to 235 (white), U and V
        /// from 16 to 240 around 128.
        case video
        /// Full ("PC", "JPEG") range: Y from 0 to 255, U and V from 0 to 255 around 128.
        case full
    }

    /// How the samples lie in memory.
    public var pixelFormat: PixelFormat
    /// Which coefficients turn the samples back into RGB.
    public var matrix: ColorMatrix
    /// Which code values black and white take.
    public var range: ColorRange

    /// A format of these parts; I420 unless said otherwise.
    public init(pixelFormat: PixelFormat = .i420, matrix: ColorMatrix, range: ColorRange) {
        self.pixelFormat = pixelFormat
        self.matrix = matrix
        self.range = range
    }

    /// I420, BT.601, video range: what libyuv's RGB-to-I420 conversions write, and so what
    /// replayd captures (`ReplayProcessing.PixelConverter.format`).
    public static let bt601VideoRange = PictureFormat(matrix: .bt601, range: .video)
    /// I420, BT.709, video range: what HD video usually is.
    public static let bt709VideoRange = PictureFormat(matrix: .bt709, range: .video)

    /// The luma value of black in this range (16 or 0); chroma's neutral value is 128 in both.
    public var blackLuma: UInt8 { range == .video ? 16 : 0 }
    /// The luma value of white in this range (235 or 255).
    public var whiteLuma: UInt8 { range == .video ? 235 : 255 }

    /// "I420 BT.601 video range", for logs and messages.
    public var description: String {
        let layout = switch pixelFormat { case .i420: "I420" }
        let coefficients = switch matrix { case .bt601: "BT.601"; case .bt709: "BT.709" }
        return "\(layout) \(coefficients) \(range == .video ? "video" : "full") range"
    }
}
