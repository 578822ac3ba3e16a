public import ReplayMedia

// The wire's codes for a picture's format, to and from ReplayMedia's `PictureFormat`: one
// mapping for replayd (which sends) and the extension kit and its harness (which receive).
// Kept out of BroadcastMessage.swift, which the fuzzer builds on its own.
extension BroadcastMessage.VideoFrame {
    /// The picture format these codes name.
    @_spi(OpenReplayKitInternal) public var pictureFormat: PictureFormat {
        let pixelFormat: PictureFormat.PixelFormat = switch format { case .i420: .i420 }
        let colorMatrix: PictureFormat.ColorMatrix = switch matrix {
        case .bt601: .bt601
        case .bt709: .bt709
        }
        let colorRange: PictureFormat.ColorRange = switch range {
        case .video: .video
        case .full: .full
        }
        return PictureFormat(pixelFormat: pixelFormat, matrix: colorMatrix, range: colorRange)
    }

    /// A frame whose format codes say `picture`.
    @_spi(OpenReplayKitInternal) public init(surface: UInt16, picture: PictureFormat, width: UInt32, height: UInt32, planes: [Plane], time: Int64,
                 orientation: BroadcastMessage.Orientation = .up, additions: Additions? = nil) {
        let format: BroadcastMessage.PixelFormat = switch picture.pixelFormat { case .i420: .i420 }
        let matrix: BroadcastMessage.ColorMatrix = switch picture.matrix {
        case .bt601: .bt601
        case .bt709: .bt709
        }
        let range: BroadcastMessage.ColorRange = switch picture.range {
        case .video: .video
        case .full: .full
        }
        self.init(surface: surface, format: format, matrix: matrix, range: range, width: width, height: height, planes: planes,
                  time: time, orientation: orientation, additions: additions)
    }
}

extension BroadcastMessage.Orientation {
    /// The wire's code for `orientation`.
    @_spi(OpenReplayKitInternal) public init(_ orientation: ReplayMedia.Orientation) {
        self = switch orientation {
        case .up: .up
        case .right: .right
        case .down: .down
        case .left: .left
        }
    }

    /// The orientation this code names.
    @_spi(OpenReplayKitInternal) public var media: ReplayMedia.Orientation {
        switch self {
        case .up: .up
        case .right: .right
        case .down: .down
        case .left: .left
        }
    }
}
