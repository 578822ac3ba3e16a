/// What replayd and an upload extension say to each other during a broadcast. Samples never
/// travel in the messages themselves: a message names a region of a shared surface that the
/// extension mapped read-only once, at the start (the XPC + IOSurface analogue).
public enum BroadcastMessage: Sendable, Equatable {
    // replayd → extension
    /// The first message; its surfaces arrive with it as descriptors, in index order.
    case hello(Hello)
    case started(setupInfo: [String: String])
    /// Identity of the app in focus, so a service can help viewers find the broadcast.
    case annotated(applicationInfo: [String: String])
    case video(VideoFrame)
    case audio(AudioPeriod)
    case paused
    case resumed
    case finished
    /// Liveness check; an extension that does not answer in time is considered hung.
    case ping(UInt32)
    /// 1.2: the frames dropped so far, capture's and the socket's, said when pictures were
    /// dropped and no `video` message carried the count (the extension holds every surface).
    case dropped(total: UInt32)

    // extension → replayd
    /// The surfaces are mapped. `minorVersion` (1.1 on): the protocol's minor version the
    /// extension speaks, sent only when replayd announced one (`BroadcastCodec.minorVersionVariable`);
    /// nil: a 1.0 extension, which gets 1.0 messages.
    case ready(minorVersion: UInt16? = nil)
    case pong(UInt32)
    /// The extension is done with a surface; replayd may reuse it.
    case release(surface: UInt16)
    /// Ends the broadcast with a message shown to the person.
    case finish(error: String)
    case serviceInfo([String: String])
    case broadcastURL(String)

    public struct Hello: Sendable, Equatable {
        public var protocolVersion: UInt16
        public var surfaceCount: UInt16
        /// Every surface has this many bytes.
        public var surfaceSize: UInt64

        public init(protocolVersion: UInt16 = BroadcastCodec.protocolVersion, surfaceCount: UInt16, surfaceSize: UInt64) {
            self.protocolVersion = protocolVersion
            self.surfaceCount = surfaceCount
            self.surfaceSize = surfaceSize
        }
    }

    public enum Orientation: UInt8, Sendable {
        case up = 0
        case right = 1
        case down = 2
        case left = 3
    }

    public enum PixelFormat: UInt8, Sendable {
        /// Planar 4:2:0: Y, then U, then V.
        case i420 = 1
    }

    /// The RGB ↔ Y′CbCr coefficients a picture was coded with.
    public enum ColorMatrix: UInt8, Sendable {
        case bt601 = 1
        case bt709 = 2
    }

    /// The code values of black and white: video (limited, Y 16–235) or full (Y 0–255).
    public enum ColorRange: UInt8, Sendable {
        case video = 1
        case full = 2
    }

    /// One picture in one surface: its format, size, planes, time and orientation.
    public struct VideoFrame: Sendable, Equatable {
        public struct Plane: Sendable, Equatable {
            public var offset: UInt64
            public var stride: UInt32
            public var rows: UInt32

            public init(offset: UInt64, stride: UInt32, rows: UInt32) {
                self.offset = offset
                self.stride = stride
                self.rows = rows
            }
        }

        public var surface: UInt16
        public var format: PixelFormat
        public var matrix: ColorMatrix
        public var range: ColorRange
        public var width: UInt32
        public var height: UInt32
        public var planes: [Plane]
        /// Nanoseconds on the monotonic clock when the picture was taken.
        public var time: Int64
        public var orientation: Orientation
        /// The fields protocol 1.1 added; nil in a 1.0 message (what replayd sends an
        /// extension that did not announce 1.1).
        public var additions: Additions?

        /// What a 1.1 `video` message says after the orientation.
        public struct Additions: Sendable, Equatable {
            /// The picture repeats the previous one: the screen did not change.
            public var isRepeat: Bool
            /// Frames replayd dropped in this broadcast so far (not sent: every surface was
            /// out, capture fell behind, or the socket would not take them).
            public var framesDropped: UInt32

            public init(isRepeat: Bool = false, framesDropped: UInt32 = 0) {
                self.isRepeat = isRepeat
                self.framesDropped = framesDropped
            }
        }

        public init(surface: UInt16, format: PixelFormat = .i420, matrix: ColorMatrix, range: ColorRange, width: UInt32, height: UInt32,
                    planes: [Plane], time: Int64, orientation: Orientation = .up, additions: Additions? = nil) {
            self.surface = surface
            self.format = format
            self.matrix = matrix
            self.range = range
            self.width = width
            self.height = height
            self.planes = planes
            self.time = time
            self.orientation = orientation
            self.additions = additions
        }
    }

    /// Interleaved 32-bit float PCM in a surface.
    public struct AudioPeriod: Sendable, Equatable {
        public enum Source: UInt8, Sendable {
            case app = 1
            case microphone = 2
        }

        public var surface: UInt16
        public var source: Source
        public var offset: UInt64
        public var frames: UInt32
        public var channels: UInt8
        public var sampleRate: UInt32
        public var time: Int64

        public init(surface: UInt16, source: Source, offset: UInt64, frames: UInt32, channels: UInt8, sampleRate: UInt32, time: Int64) {
            self.surface = surface
            self.source = source
            self.offset = offset
            self.frames = frames
            self.channels = channels
            self.sampleRate = sampleRate
            self.time = time
        }

        public var byteCount: UInt64 { UInt64(frames) * UInt64(channels) * 4 }
    }
}
