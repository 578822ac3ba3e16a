public import ReplayMedia

/// Lays captured audio onto one gap-free sample timeline that starts at the recording's
/// origin, so that sample N of the movie is heard at origin + N / rate.
///
/// Capture stamps are jittery (they come from read times and the server's latency
/// estimate), so small disagreements are averaged rather than obeyed: the start is placed
/// by the median of the first buffers' stamps, and afterwards a sustained disagreement
/// (clock drift) or a large one (a gap in capture) is corrected by inserting silence or
/// dropping samples.
public struct AudioTimeline: Sendable {
    /// When sample frame 0 is heard, on the monotonic clock.
    public let origin: MediaTime
    /// Frames per second (of the input and the output: the timeline does not resample).
    public let sampleRate: Int
    /// Samples per frame.
    public let channels: Int
    /// The averaged disagreement that triggers a correction.
    public let tolerance: MediaTime
    /// A single disagreement this large is corrected at once.
    public let discontinuity: MediaTime
    /// Buffers gathered before the start is placed (about 100 ms of 10 ms reads).
    public let settlingBuffers: Int

    /// Index of the next sample frame the timeline will emit.
    public private(set) var nextIndex: Int64 = 0
    /// Frames of silence inserted so far, for diagnostics.
    public private(set) var insertedFrames: Int64 = 0
    /// Frames of captured audio dropped so far, for diagnostics.
    public private(set) var droppedFrames: Int64 = 0
    private var averageError: Double = 0
    private var settling: [AudioBuffer] = []
    private var anchored = false

    /// A timeline from `origin`; the defaults suit 10 ms capture reads.
    public init(origin: MediaTime, sampleRate: Int, channels: Int,
                tolerance: MediaTime = MediaTime(nanoseconds: 4_000_000),
                discontinuity: MediaTime = MediaTime(nanoseconds: 200_000_000),
                settlingBuffers: Int = 10) {
        self.origin = origin
        self.sampleRate = sampleRate
        self.channels = channels
        self.tolerance = tolerance
        self.discontinuity = discontinuity
        self.settlingBuffers = max(1, settlingBuffers)
    }

    /// The samples to append for `buffer`: possibly led by silence, possibly with its
    /// head dropped, possibly empty (while the start is being placed).
    public mutating func place(_ buffer: AudioBuffer) -> [Float] {
        precondition(buffer.sampleRate == sampleRate && buffer.channels == channels, "format changed mid-stream")
        guard anchored else {
            settling.append(buffer)
            return settling.count >= settlingBuffers ? settle() : []
        }
        let error = expectedIndex(of: buffer) - nextIndex  // > 0: the buffer belongs later than we are
        var correction: Int64 = 0
        if abs(error) >= frames(discontinuity) {
            correction = error
            averageError = 0
        } else {
            averageError = averageError * 0.9 + Double(error) * 0.1
            if abs(averageError) >= Double(frames(tolerance)) {
                correction = Int64(averageError.rounded())
                averageError = 0
            }
        }
        return emit(buffer.samples, correction: correction)
    }

    /// Silence up to `time`, so the audio track ends where the video does when capture stalled.
    public mutating func pad(through time: MediaTime) -> [Float] {
        var samples = anchored ? [] : settle()
        let target = (time - origin).value(timescale: Int64(sampleRate))
        if target > nextIndex {
            let silence = target - nextIndex
            insertedFrames += silence
            nextIndex = target
            samples += [Float](repeating: 0, count: Int(silence) * channels)
        }
        return samples
    }

    /// Places the gathered buffers: they are contiguous, so each one's stamp votes for where
    /// the first sample belongs, and the median vote wins.
    private mutating func settle() -> [Float] {
        anchored = true
        guard !settling.isEmpty else { return [] }
        var votes: [Int64] = []
        var offset: Int64 = 0
        for buffer in settling {
            votes.append(expectedIndex(of: buffer) - offset)
            offset += Int64(buffer.frameCount)
        }
        let start = votes.sorted()[votes.count / 2]
        let samples = settling.flatMap(\.samples)
        settling = []
        return emit(samples, correction: start - nextIndex)
    }

    private mutating func emit(_ samples: [Float], correction: Int64) -> [Float] {
        var samples = samples
        if correction > 0 {
            insertedFrames += correction
            samples = [Float](repeating: 0, count: Int(correction) * channels) + samples
        } else if correction < 0 {
            let drop = min(Int(-correction), samples.count / channels)
            droppedFrames += Int64(drop)
            samples.removeFirst(drop * channels)
        }
        nextIndex += Int64(samples.count / channels)
        return samples
    }

    private func expectedIndex(of buffer: AudioBuffer) -> Int64 {
        (buffer.time - origin).value(timescale: Int64(sampleRate))
    }

    private func frames(_ time: MediaTime) -> Int64 { time.value(timescale: Int64(sampleRate)) }
}
