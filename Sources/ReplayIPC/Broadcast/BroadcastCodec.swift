/// The binary wire format of `BroadcastMessage`: a little-endian UInt32 length, then a type
/// byte and the fields. Decoding is the extension's and the daemon's first line of defence
/// against each other, so it checks every length, count, index and range against the
/// surfaces before anything is used, and throws instead of trapping. It is fuzzed
/// (`Fuzz/BroadcastDecoder`).
public enum BroadcastCodec {
    /// The major version `hello` carries; a change here breaks every extension.
    public static let protocolVersion: UInt16 = 1
    /// The minor version this side speaks: 1.1 added `video`'s repeat flag and drop count,
    /// 1.2 the `dropped` message (drops said while no picture goes out).
    /// Additions go only to a peer that announced them, so 1.0 extensions keep working: replayd
    /// names its minor version in the extension's environment (`minorVersionVariable`), the
    /// extension answers `ready` with the one it speaks (at most replayd's), and replayd writes
    /// what that version knows.
    public static let minorVersion: UInt16 = 2
    /// The environment variable in which replayd tells the extension its minor version.
    public static let minorVersionVariable = "OPENREPLAYKIT_BROADCAST_MINOR_VERSION"
    /// No message is larger: samples travel in surfaces, not in messages.
    public static let maxMessage = 64 * 1024
    /// The largest message with its length prefix, as it arrives from the socket.
    public static let maxFramedMessage = maxMessage + 4
    public static let maxSurfaces: UInt16 = 64
    public static let maxDimension: UInt32 = 16384

    /// What the decoder checks surface references against.
    public struct Surfaces: Sendable, Equatable {
        public var count: UInt16
        public var size: UInt64
        public init(count: UInt16, size: UInt64) {
            self.count = count
            self.size = size
        }
        /// Before `hello`: no surface may be named.
        public static let none = Surfaces(count: 0, size: 0)
    }

    public struct DecodeError: Error, Equatable, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    private enum Tag: UInt8 {
        case hello = 1, started, annotated, video, audio, paused, resumed, finished, ping, dropped
        case ready = 20, pong, release, finish, serviceInfo, broadcastURL
    }

    public static func encode(_ message: BroadcastMessage) -> [UInt8] {
        var out = Writer()
        switch message {
        case .hello(let hello):
            out.byte(Tag.hello.rawValue)
            out.u16(hello.protocolVersion)
            out.u16(hello.surfaceCount)
            out.u64(hello.surfaceSize)
        case .started(let info): out.byte(Tag.started.rawValue); out.dictionary(info)
        case .annotated(let info): out.byte(Tag.annotated.rawValue); out.dictionary(info)
        case .video(let frame):
            out.byte(Tag.video.rawValue)
            out.u16(frame.surface)
            out.byte(frame.format.rawValue)
            out.byte(frame.matrix.rawValue)
            out.byte(frame.range.rawValue)
            out.u32(frame.width)
            out.u32(frame.height)
            out.byte(UInt8(frame.planes.count))
            for plane in frame.planes {
                out.u64(plane.offset)
                out.u32(plane.stride)
                out.u32(plane.rows)
            }
            out.i64(frame.time)
            out.byte(frame.orientation.rawValue)
            if let additions = frame.additions {
                out.byte(additions.isRepeat ? VideoFlags.isRepeat : 0)
                out.u32(additions.framesDropped)
            }
        case .audio(let period):
            out.byte(Tag.audio.rawValue)
            out.u16(period.surface)
            out.byte(period.source.rawValue)
            out.u64(period.offset)
            out.u32(period.frames)
            out.byte(period.channels)
            out.u32(period.sampleRate)
            out.i64(period.time)
        case .paused: out.byte(Tag.paused.rawValue)
        case .resumed: out.byte(Tag.resumed.rawValue)
        case .finished: out.byte(Tag.finished.rawValue)
        case .ping(let sequence): out.byte(Tag.ping.rawValue); out.u32(sequence)
        case .dropped(let total): out.byte(Tag.dropped.rawValue); out.u32(total)
        case .ready(let minorVersion):
            out.byte(Tag.ready.rawValue)
            if let minorVersion { out.u16(minorVersion) }
        case .pong(let sequence): out.byte(Tag.pong.rawValue); out.u32(sequence)
        case .release(let surface): out.byte(Tag.release.rawValue); out.u16(surface)
        case .finish(let error): out.byte(Tag.finish.rawValue); out.string(error)
        case .serviceInfo(let info): out.byte(Tag.serviceInfo.rawValue); out.dictionary(info)
        case .broadcastURL(let url): out.byte(Tag.broadcastURL.rawValue); out.string(url)
        }
        var framed = Writer()
        framed.u32(UInt32(out.bytes.count))
        return framed.bytes + out.bytes
    }

    /// Decodes one message as received, length prefix included; the prefix must match.
    public static func decode(framed bytes: [UInt8], surfaces: Surfaces) throws(DecodeError) -> BroadcastMessage {
        guard bytes.count >= 4 else { throw DecodeError("message of \(bytes.count) bytes has no length prefix") }
        let length = Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16 | Int(bytes[3]) << 24
        guard length == bytes.count - 4 else { throw DecodeError("length prefix \(length) does not match \(bytes.count - 4) bytes") }
        return try decode(bytes[4...], surfaces: surfaces)
    }

    /// Decodes one message body (without its length prefix).
    public static func decode(_ body: some Collection<UInt8>, surfaces: Surfaces) throws(DecodeError) -> BroadcastMessage {
        guard body.count <= maxMessage else { throw DecodeError("message of \(body.count) bytes is over the limit") }
        var input = Reader(Array(body))
        guard let tag = Tag(rawValue: try input.byte()) else { throw DecodeError("unknown message type") }
        let message: BroadcastMessage
        switch tag {
        case .hello:
            let hello = BroadcastMessage.Hello(protocolVersion: try input.u16(), surfaceCount: try input.u16(), surfaceSize: try input.u64())
            guard hello.protocolVersion == protocolVersion else { throw DecodeError("protocol version \(hello.protocolVersion) is not \(protocolVersion)") }
            guard hello.surfaceCount <= maxSurfaces, hello.surfaceSize <= 1 << 30 else { throw DecodeError("surface pool too large") }
            message = .hello(hello)
        case .started: message = .started(setupInfo: try input.dictionary())
        case .annotated: message = .annotated(applicationInfo: try input.dictionary())
        case .video: message = .video(try decodeVideo(&input, surfaces: surfaces))
        case .audio: message = .audio(try decodeAudio(&input, surfaces: surfaces))
        case .paused: message = .paused
        case .resumed: message = .resumed
        case .finished: message = .finished
        case .ping: message = .ping(try input.u32())
        case .dropped: message = .dropped(total: try input.u32())
        case .ready: message = .ready(minorVersion: input.isAtEnd ? nil : try input.u16())
        case .pong: message = .pong(try input.u32())
        case .release:
            let surface = try input.u16()
            guard surface < surfaces.count else { throw DecodeError("release of surface \(surface), of \(surfaces.count)") }
            message = .release(surface: surface)
        case .finish: message = .finish(error: try input.string())
        case .serviceInfo: message = .serviceInfo(try input.dictionary())
        case .broadcastURL: message = .broadcastURL(try input.string())
        }
        guard input.isAtEnd else { throw DecodeError("\(input.remaining) trailing bytes") }
        return message
    }

    private static func decodeVideo(_ input: inout Reader, surfaces: Surfaces) throws(DecodeError) -> BroadcastMessage.VideoFrame {
        let surface = try input.u16()
        guard let format = BroadcastMessage.PixelFormat(rawValue: try input.byte()) else { throw DecodeError("unknown pixel format") }
        guard let matrix = BroadcastMessage.ColorMatrix(rawValue: try input.byte()) else { throw DecodeError("unknown colour matrix") }
        guard let range = BroadcastMessage.ColorRange(rawValue: try input.byte()) else { throw DecodeError("unknown colour range") }
        let width = try input.u32(), height = try input.u32()
        let planeCount = try input.byte()
        guard surface < surfaces.count else { throw DecodeError("video in surface \(surface), of \(surfaces.count)") }
        guard width > 0, height > 0, width <= maxDimension, height <= maxDimension, width % 2 == 0, height % 2 == 0 else {
            throw DecodeError("picture size \(width)x\(height) is not a valid I420 size")
        }
        guard planeCount == 3 else { throw DecodeError("I420 has 3 planes, not \(planeCount)") }
        var planes: [BroadcastMessage.VideoFrame.Plane] = []
        for index in 0..<3 {
            let plane = BroadcastMessage.VideoFrame.Plane(offset: try input.u64(), stride: try input.u32(), rows: try input.u32())
            let width = index == 0 ? width : width / 2, rows = index == 0 ? height : height / 2
            guard plane.stride >= width, plane.rows == rows else { throw DecodeError("plane \(index) does not fit the picture") }
            // offset + stride * rows within the surface, computed without overflow.
            let (span, overflow) = UInt64(plane.stride).multipliedReportingOverflow(by: UInt64(plane.rows))
            guard !overflow, plane.offset <= surfaces.size, span <= surfaces.size - plane.offset else {
                throw DecodeError("plane \(index) reaches past its surface")
            }
            planes.append(plane)
        }
        let time = try input.i64()
        guard let orientation = BroadcastMessage.Orientation(rawValue: try input.byte()) else { throw DecodeError("unknown orientation") }
        // 1.1's fields, when there are any: all of them.
        var additions: BroadcastMessage.VideoFrame.Additions?
        if !input.isAtEnd {
            let flags = try input.byte()
            guard flags & ~VideoFlags.known == 0 else { throw DecodeError("unknown video flags \(flags)") }
            additions = .init(isRepeat: flags & VideoFlags.isRepeat != 0, framesDropped: try input.u32())
        }
        return .init(surface: surface, format: format, matrix: matrix, range: range, width: width, height: height, planes: planes,
                     time: time, orientation: orientation, additions: additions)
    }

    /// The bits of a 1.1 `video` message's flags byte.
    private enum VideoFlags {
        static let isRepeat: UInt8 = 1
        static let known: UInt8 = isRepeat
    }

    private static func decodeAudio(_ input: inout Reader, surfaces: Surfaces) throws(DecodeError) -> BroadcastMessage.AudioPeriod {
        let surface = try input.u16()
        guard let source = BroadcastMessage.AudioPeriod.Source(rawValue: try input.byte()) else { throw DecodeError("unknown audio source") }
        let period = BroadcastMessage.AudioPeriod(
            surface: surface, source: source, offset: try input.u64(), frames: try input.u32(), channels: try input.byte(),
            sampleRate: try input.u32(), time: try input.i64())
        guard surface < surfaces.count else { throw DecodeError("audio in surface \(surface), of \(surfaces.count)") }
        guard (1...8).contains(period.channels), (8_000...192_000).contains(period.sampleRate), period.frames > 0,
              period.frames <= 192_000 else { throw DecodeError("implausible audio format") }
        guard period.offset <= surfaces.size, period.byteCount <= surfaces.size - period.offset else {
            throw DecodeError("audio reaches past its surface")
        }
        return period
    }

    /// Appends little-endian fields.
    private struct Writer {
        var bytes: [UInt8] = []
        mutating func byte(_ value: UInt8) { bytes.append(value) }
        mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        mutating func i64(_ value: Int64) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        mutating func string(_ value: String) {
            let utf8 = Array(value.utf8.prefix(Int(UInt16.max)))
            u16(UInt16(utf8.count))
            bytes += utf8
        }
        mutating func dictionary(_ value: [String: String]) {
            let pairs = value.sorted { $0.key < $1.key }.prefix(255)
            byte(UInt8(pairs.count))
            for (key, entry) in pairs {
                string(key)
                string(entry)
            }
        }
    }

    /// Reads little-endian fields, throwing at the end of the input rather than trapping.
    private struct Reader {
        let bytes: [UInt8]
        var position = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { position == bytes.count }
        var remaining: Int { bytes.count - position }

        mutating func take(_ count: Int) throws(DecodeError) -> ArraySlice<UInt8> {
            guard count <= remaining else { throw DecodeError("message ends early") }
            defer { position += count }
            return bytes[position..<position + count]
        }

        mutating func integer<T: FixedWidthInteger>(_: T.Type) throws(DecodeError) -> T {
            try take(MemoryLayout<T>.size).reversed().reduce(T.zero) { $0 << 8 | T($1) }
        }

        mutating func byte() throws(DecodeError) -> UInt8 { try integer(UInt8.self) }
        mutating func u16() throws(DecodeError) -> UInt16 { try integer(UInt16.self) }
        mutating func u32() throws(DecodeError) -> UInt32 { try integer(UInt32.self) }
        mutating func u64() throws(DecodeError) -> UInt64 { try integer(UInt64.self) }
        mutating func i64() throws(DecodeError) -> Int64 { Int64(bitPattern: try integer(UInt64.self)) }

        mutating func string() throws(DecodeError) -> String {
            let count = Int(try u16())
            guard let text = String(validating: try take(count), as: UTF8.self) else { throw DecodeError("text is not UTF-8") }
            return text
        }

        mutating func dictionary() throws(DecodeError) -> [String: String] {
            var result: [String: String] = [:]
            for _ in 0..<Int(try byte()) {
                let key = try string()
                result[key] = try string()
            }
            return result
        }
    }
}
