public import ReplayMedia

/// When each sample of one captured audio stream was captured, on the monotonic clock: the
/// stream's own clock (its sample count: frame N is N / rate after frame 0) placed by what
/// arrived when.
///
/// Audio servers deliver a source in whatever rhythm it keeps: 10 ms reads from a sound card,
/// or 2 s blocks from a source that buffers (a null sink's monitor fed without a latency
/// request, a network or Bluetooth microphone). Dating each read by the server's interpolated
/// latency fails for blocks: between timing updates the server's write index is stale, the
/// latency it computes runs negative, and a whole block was stamped up to 2 s after it
/// arrived (issue 29). Here every arrival bounds the stream's placement instead: the
/// frames received by time A were captured by A less the source's own latency (the
/// server's timing information), so frame 0 lies at or before A − received / rate − latency.
/// The tightest such bound over the last `window` places the stream; it never dates a
/// sample after it arrived, keeps every stamp on the stream's own clock (a block is as
/// contiguous as the source delivered it: no gap appears that the source did not leave), and
/// follows a source whose clock drifts against the monotonic clock within one window.
public struct SourceClock: Sendable {
    /// The stream's sample rate: frame N is N / `sampleRate` seconds after frame 0.
    public let sampleRate: Int
    /// How long an arrival's bound is kept: long enough to span several of a block source's
    /// blocks, short enough to follow drift (100 ppm over 20 s is 2 ms).
    public let window: MediaTime
    /// Candidate placements of frame 0 (ns), oldest first, each lower than the ones before
    /// it was dropped: the front is the tightest bound of the window.
    private var bounds: [(arrival: Int64, origin: Int64)] = []
    private var head = 0

    /// A clock for a stream of `sampleRate` frames a second whose arrivals' bounds are kept
    /// for `window`; it places nothing until the first arrival.
    public init(sampleRate: Int, window: MediaTime = MediaTime(seconds: 20)) {
        self.sampleRate = sampleRate
        self.window = window
    }

    /// At `arrival`, the stream had delivered `framesReceived` frames in all (read or waiting
    /// to be read); the source says a sample takes `sourceLatency` to come through it.
    public mutating func observe(arrival: MediaTime, framesReceived: Int64, sourceLatency: MediaTime = .zero) {
        let origin = arrival.nanoseconds - MediaTime.samples(framesReceived, rate: sampleRate).nanoseconds
            - max(0, sourceLatency.nanoseconds)
        while bounds.count > head, bounds[bounds.count - 1].origin >= origin { bounds.removeLast() }
        bounds.append((arrival.nanoseconds, origin))
        while bounds.count - head > 1, bounds[head].arrival < arrival.nanoseconds - window.nanoseconds { head += 1 }
        if head > 1024 {
            bounds.removeFirst(head)
            head = 0
        }
    }

    /// The stream lost data it cannot account for (an overflow): its sample count no longer
    /// follows time, so the placement starts afresh from the next arrival.
    public mutating func restart() {
        bounds = []
        head = 0
    }

    /// When frame `index` was captured; nil before the first arrival.
    public func time(ofFrame index: Int64) -> MediaTime? {
        guard bounds.count > head else { return nil }
        return MediaTime(nanoseconds: bounds[head].origin) + MediaTime.samples(index, rate: sampleRate)
    }
}
