import ReplayCaptureModel
import ReplayCodec
@testable import ReplayDaemon
import ReplayMedia
import Synchronization

/// Records what a session writes; can fail like a full disk after a number of pictures.
final class FakeMovieSink: MovieSink, MovieSinkFactory, @unchecked Sendable {
    // @unchecked: all state is behind `state`.
    struct Written {
        var videoTimes: [MediaTime] = []
        /// Each picture's size, as "WxH".
        var videoSizes: [String] = []
        var audioFrames: [AudioSource: Int] = [:]
        var finished = false
        var abandoned = false
        var format: MovieFormat?
    }

    private let state = Mutex((written: Written(), failAfterFrames: Int?.none))

    init(failAfterFrames: Int? = nil) { state.withLock { $0.failAfterFrames = failAfterFrames } }

    var written: Written { state.withLock { $0.written } }

    func makeMovieSink(path: String, format: MovieFormat) throws(CodecError) -> any MovieSink {
        state.withLock { $0.written.format = format }
        return self
    }

    var videoFrames: Int { state.withLock { $0.written.videoTimes.count } }
    var bytesWritten: Int64 { Int64(videoFrames * 1000) }

    func append(_ sample: VideoSample, at time: MediaTime) throws(CodecError) {
        let full = state.withLock { state -> Bool in
            if let limit = state.failAfterFrames, state.written.videoTimes.count >= limit { return true }
            state.written.videoTimes.append(time)
            state.written.videoSizes.append("\(sample.pixels.width)x\(sample.pixels.height)")
            return false
        }
        if full { throw CodecError(.writeFailed, "cannot write the movie: No space left on device") }
    }

    func append(audio samples: [Float], source: AudioSource) throws(CodecError) {
        state.withLock { $0.written.audioFrames[source, default: 0] += samples.count / 2 }
    }

    func finish() throws(CodecError) { state.withLock { $0.written.finished = true } }
    func abandon() { state.withLock { $0.written.abandoned = true } }
}
