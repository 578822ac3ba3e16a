import CFFmpeg

/// A failure inside FFmpeg or while writing the movie, with FFmpeg's own explanation.
public struct CodecError: Error, CustomStringConvertible, Equatable {
    public enum Code: String, Sendable {
        case encoderUnavailable
        case encoderFailed
        case muxerFailed
        /// The movie could not be written (disk full, I/O error); the file ends at the last whole fragment.
        case writeFailed
        /// A trim's span is not a span of the movie (negative, empty, or past its end).
        case invalidSpan
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    init(_ code: Code, _ what: String, status: Int32) {
        self.init(code, "\(what): \(ffmpegErrorString(status))")
    }

    public var description: String { message }
}

func ffmpegErrorString(_ status: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    _ = CFFmpeg_errorString(status, &buffer, buffer.count)
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
