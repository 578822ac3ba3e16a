public import ReplayMedia

/// Cuts audio that arrives in any rhythm (22,596-frame bursts every 512 ms, 100-frame
/// crumbs) into steady periods of exactly `periodFrames` (1024) at one sample rate, the unit
/// encoders and the mixer work in.
///
/// Periods lie on a fixed grid: period n starts at origin + n · periodFrames / sampleRate
/// (to the nanosecond), where origin is the first buffer's stamp unless one is given, so two
/// splitters sharing an origin cut the same instants and can be mixed period by period.
///
/// Stamps only place audio when they disagree with the sample count by more than
/// `tolerance` (20 ms); smaller disagreements are stamp jitter and the frames are simply
/// appended, so bursts join without a gap or an overlap.
///
/// Gap policy (a stamp more than `tolerance` ahead): re-anchor on the same grid. The audio
/// after the gap is placed at its stamped position; the rest of the period the gap begins in
/// and the head of the period it ends in are filled with silence, and periods lying wholly
/// inside the gap are not emitted. So a long pause costs no memory, period times stay on the
/// grid, and a consumer sees the pause as a jump in period time (`AudioTimeline` or the mixer
/// turn it into silence if they need a continuous track).
/// A stamp more than `tolerance` behind is an overlap: its frames that would land before the
/// current position are dropped (counted in `droppedFrames`), as are frames before the origin.
public struct PeriodSplitter: Sendable {
    /// Frames per second of the input and the periods (the splitter does not resample).
    public let sampleRate: Int
    /// Frames in each period.
    public let periodFrames: Int
    /// How far a stamp may stray from where the audio so far ends before it counts as a gap
    /// (later) or an overlap (earlier) rather than jitter.
    public let tolerance: MediaTime
    /// Where period 0 starts; nil until the first buffer when not given.
    public private(set) var origin: MediaTime?
    /// Silence written into emitted periods (leading silence, gap edges, `flush()` padding).
    public private(set) var insertedFrames: Int64 = 0
    /// Frames dropped because they overlapped audio already placed or preceded the origin.
    public private(set) var droppedFrames: Int64 = 0

    /// Grid index (frames since origin) of the next frame to write; nil before any audio.
    public private(set) var nextIndex: Int64?
    private var channels: Int?
    private var source: AudioSource = .app
    /// The current, incomplete period's frames (interleaved).
    private var pending: [Float] = []

    /// A splitter whose grid starts at `origin`, or at the first buffer's stamp when nil.
    public init(sampleRate: Int = 48_000, periodFrames: Int = 1024, origin: MediaTime? = nil,
                tolerance: MediaTime = MediaTime(nanoseconds: 20_000_000)) {
        precondition(sampleRate > 0 && periodFrames > 0)
        self.sampleRate = sampleRate
        self.periodFrames = periodFrames
        self.origin = origin
        self.tolerance = tolerance
    }

    /// Frames waiting in the current, incomplete period.
    public var pendingFrames: Int { pending.count / (channels ?? 1) }

    /// The time the next frame will be placed at.
    public var nextTime: MediaTime? {
        guard let origin, let nextIndex else { return nil }
        return origin + MediaTime.samples(nextIndex, rate: sampleRate)
    }

    /// The time of period `index` on this splitter's grid.
    public func time(ofPeriod index: Int64) -> MediaTime? {
        origin.map { $0 + MediaTime.samples(index * Int64(periodFrames), rate: sampleRate) }
    }

    /// The periods `buffer` completes, oldest first.
    public mutating func append(_ buffer: AudioBuffer) -> [AudioBuffer] {
        guard buffer.frameCount > 0 else { return [] }
        precondition(buffer.sampleRate == sampleRate, "resample to \(sampleRate) Hz before splitting")
        precondition(self.channels == nil || self.channels == buffer.channels, "channel count changed mid-stream")
        let channels = buffer.channels
        self.channels = channels
        source = buffer.source
        let origin = origin ?? buffer.time
        self.origin = origin
        let stamped = (buffer.time - origin).value(timescale: Int64(sampleRate))
        let limit = tolerance.value(timescale: Int64(sampleRate))
        var skip: Int64 = 0
        var periods: [AudioBuffer] = []
        let start: Int64
        if let next = nextIndex, abs(stamped - next) <= limit {
            // Contiguous: the sample count, not the stamp, says where these frames go.
            start = next
        } else if let next = nextIndex, stamped < next {
            skip = next - stamped
            start = next
        } else {
            skip = max(0, -stamped)
            start = max(stamped, 0)
            move(to: start, origin: origin, channels: channels, into: &periods)
        }
        let skipped = min(Int(skip), buffer.frameCount)
        droppedFrames += Int64(skipped)
        write(buffer.samples[(skipped * channels)...], at: start, origin: origin, channels: channels, into: &periods)
        return periods
    }

    /// The incomplete period, completed with silence; call at the end of the stream.
    public mutating func flush() -> AudioBuffer? {
        guard !pending.isEmpty, let channels, let next = nextIndex, let origin else { return nil }
        let missing = periodFrames - pending.count / channels
        insertedFrames += Int64(missing)
        pending += [Float](repeating: 0, count: missing * channels)
        nextIndex = next + Int64(missing)
        return takePeriod(endingAt: next + Int64(missing), origin: origin, channels: channels)
    }

    /// Moves the write position forward to `target` (a first buffer, or one after a gap).
    private mutating func move(to target: Int64, origin: MediaTime, channels: Int, into periods: inout [AudioBuffer]) {
        if let next = nextIndex, !pending.isEmpty {
            let periodEnd = next - Int64(pending.count / channels) + Int64(periodFrames)
            let fill = Int(min(target, periodEnd) - next)
            insertedFrames += Int64(fill)
            pending += [Float](repeating: 0, count: fill * channels)
            nextIndex = next + Int64(fill)
            if target < periodEnd { return }
            periods.append(takePeriod(endingAt: next + Int64(fill), origin: origin, channels: channels))
        }
        let period = Int64(periodFrames)
        let lead = Int(((target % period) + period) % period)
        insertedFrames += Int64(lead)
        pending = [Float](repeating: 0, count: lead * channels)
        nextIndex = target
    }

    /// Writes `samples` from grid index `start` (the write position, `nextIndex`) on.
    private mutating func write(_ samples: ArraySlice<Float>, at start: Int64, origin: MediaTime, channels: Int,
                                into periods: inout [AudioBuffer]) {
        var next = start
        var rest = samples
        while !rest.isEmpty {
            let room = (periodFrames - pending.count / channels) * channels
            let taken = rest.prefix(room)
            pending += taken
            rest = rest.dropFirst(taken.count)
            next += Int64(taken.count / channels)
            nextIndex = next
            if pending.count == periodFrames * channels {
                periods.append(takePeriod(endingAt: next, origin: origin, channels: channels))
            }
        }
    }

    /// Emits the full `pending` period, which ends at grid index `end` (the write position).
    private mutating func takePeriod(endingAt end: Int64, origin: MediaTime, channels: Int) -> AudioBuffer {
        let start = end - Int64(periodFrames)
        let period = AudioBuffer(source: source, time: origin + MediaTime.samples(start, rate: sampleRate),
                                 sampleRate: sampleRate, channels: channels, samples: pending)
        pending = []
        pending.reserveCapacity(periodFrames * channels)
        return period
    }
}
