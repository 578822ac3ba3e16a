public import ReplayMedia

/// Where a recording's encoded movie goes. `MovieWriter` (H.264/AAC in fragmented MP4) is
/// the real one; sessions see only this, so their logic is tested with a fake.
public protocol MovieSink: AnyObject {
    var videoFrames: Int { get }
    var bytesWritten: Int64 { get }
    /// Encodes a picture shown at `time` from the movie's start.
    func append(_ sample: VideoSample, at time: MediaTime) throws(CodecError)
    /// Appends PCM that continues the track of `source` without a gap.
    func append(audio samples: [Float], source: AudioSource) throws(CodecError)
    /// Flushes the encoders and closes the file.
    func finish() throws(CodecError)
    /// Closes after a failure, keeping what was completely written.
    func abandon()
}

/// Opens movie sinks; chosen once at start-up with the capture backend.
public protocol MovieSinkFactory: Sendable {
    func makeMovieSink(path: String, format: MovieFormat) throws(CodecError) -> any MovieSink
}

extension MovieWriter: MovieSink {}

/// Movies written by FFmpeg into files.
public struct MovieFileFactory: MovieSinkFactory {
    public init() {}
    public func makeMovieSink(path: String, format: MovieFormat) throws(CodecError) -> any MovieSink {
        try MovieWriter(path: path, format: format)
    }
}
