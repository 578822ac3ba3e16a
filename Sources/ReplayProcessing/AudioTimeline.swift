public import ReplayMedia

/// Lays captured audio onto one gap-free sample timeline that starts at the recording's
/// origin, so that sample N of the movie is heard at origin + N / rate.
///
/// Capture stamps are jittery (they come from read times and reported latency), so small
/// disagreements are averaged rather than obeyed; a sustained disagreement (clock drift)
/// or a large one (a gap in capture) is corrected by inserting silence or dropping samples.
public struct AudioTimeline: Sendable {
    public let origin: MediaTime
    public let sampleRate: Int
    public let channels: Int
    /// The averaged disagreement that triggers a correction.
    public let tolerance: MediaTime
    /// A single disagreement this large is corrected at once.
    public let discontinuity: MediaTime

    /// Index of the next sample frame the timeline will emit.
    public private(set) var nextIndex: Int64 = 0
    /// Frames of silence inserted and dropped so far, for diagnostics.
    public private(set) var insertedFrames: Int64 = 0
    public private(set) var droppedFrames: Int64 = 0
    private var averageError: Double = 0
    private var anchored = false

    public init(origin: MediaTime, sampleRate: Int, channels: Int,
                tolerance: MediaTime = MediaTime(nanoseconds: 4_000_000),
                discontinuity: MediaTime = MediaTime(nanoseconds: 200_000_000)) {
        self.origin = origin
        self.sampleRate = sampleRate
        self.channels = channels
        self.tolerance = tolerance
        self.discontinuity = discontinuity
    }

    /// The samples to append for `buffer`: possibly led by silence, possibly with its
    /// head dropped, possibly empty.
    public mutating func place(_ buffer: AudioBuffer) -> [Float] {
        precondition(buffer.sampleRate == sampleRate && buffer.channels == channels, "format changed mid-stream")
        let expected = (buffer.time - origin).value(timescale: Int64(sampleRate))
        let error = expected - nextIndex  // > 0: the buffer belongs later than we are
        let toleranceFrames = tolerance.value(timescale: Int64(sampleRate))
        let jumpFrames = discontinuity.value(timescale: Int64(sampleRate))

        var correction: Int64 = 0
        if !anchored || abs(error) >= jumpFrames {
            correction = error
            averageError = 0
            anchored = true
        } else {
            averageError = averageError * 0.9 + Double(error) * 0.1
            if abs(averageError) >= Double(toleranceFrames) {
                correction = Int64(averageError.rounded())
                averageError = 0
            }
        }

        var samples = buffer.samples
        if correction > 0 {
            insertedFrames += correction
            samples = [Float](repeating: 0, count: Int(correction) * channels) + samples
        } else if correction < 0 {
            let drop = min(Int(-correction), buffer.frameCount)
            droppedFrames += Int64(drop)
            samples.removeFirst(drop * channels)
        }
        nextIndex += Int64(samples.count / channels)
        return samples
    }

    /// Silence up to `time`, so the audio track ends where the video does when capture stalled.
    public mutating func pad(through time: MediaTime) -> [Float] {
        let target = (time - origin).value(timescale: Int64(sampleRate))
        guard target > nextIndex else { return [] }
        let frames = target - nextIndex
        insertedFrames += frames
        nextIndex = target
        return [Float](repeating: 0, count: Int(frames) * channels)
    }
}
