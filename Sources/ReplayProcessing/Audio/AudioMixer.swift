public import ReplayMedia

/// Down-mixes app audio and the microphone into one stereo stream of fixed periods (1024
/// frames at 48 kHz), what a live extension sends when its service takes a single track.
///
/// Each source goes through its own `Resampler` (to 48 kHz stereo) and `PeriodSplitter`;
/// both splitters share one grid (origin: the first buffer's stamp), so period n of the app
/// and period n of the mic cover the same instant and are summed sample by sample.
///
/// Waiting: period n is mixed once every source has it, or has moved past it, or is
/// absent: it has delivered nothing for n while another source is ahead of n's end by more
/// than its wait. The wait is `maxWait` (100 ms) plus the largest of the source's recent
/// deliveries, at most `capacity`: a source that arrives in 512 ms bursts (ReplayKit's app
/// audio on iOS 12) is waited for ~612 ms instead of being replaced by silence every time,
/// while a steady 23 ms source costs ~123 ms of latency. An absent source counts as
/// silence; its audio that arrives after its period was mixed is dropped (`lateFrames`).
/// A period no source has audio for (both paused) is skipped, not emitted as silence.
///
/// Memory: each source's queue holds at most `capacity` (1 s) of periods; beyond it the
/// oldest period is dropped and counted (`droppedFrames`), e.g. when the consumer stops
/// calling `nextPeriods()` or a source's wait is configured longer than the cap.
///
/// Clipping: per-source gain (default 1.0), then a peak limiter. A sum that stays within
/// ±`Limiter.ceiling` (0.99) passes bit-exact; louder passages get a smoothly varying gain
/// that reaches ceiling/peak 1 ms before each peak and recovers over ~100 ms. The gain is
/// never above ceiling/peak for any frame, so |sample| ≤ 0.99 always, without the harmonics
/// of hard or soft clipping, and without the fixed −6 dB halving that would make a lone
/// source quieter.
///
/// There is no "mixed" `AudioSource`; periods are tagged `outputSource` (`.app` by default,
/// the stream a single-track consumer reads).
public struct AudioMixer: Sendable {
    /// The output's frames per second; every source is resampled to it.
    public let sampleRate: Int
    /// The output's channels (2: stereo).
    public let channels: Int
    /// Frames in each mixed period.
    public let periodFrames: Int
    /// How long a period waits for a late source beyond that source's recent delivery size.
    public let maxWait: MediaTime
    /// The most audio queued per source; older periods are dropped past it.
    public let capacity: MediaTime
    /// The source the mixed periods are tagged with.
    public let outputSource: AudioSource

    /// Where period 0 starts: the first buffer's stamp.
    public private(set) var origin: MediaTime?
    /// Index of the next period to mix (its time is origin + index · periodFrames / sampleRate).
    public private(set) var nextPeriodIndex: Int64 = 0
    private var lanes: [Lane]
    private var limiter = Limiter()

    /// A mixer of both sources; `gains` scales each (1.0 unless given).
    public init(sampleRate: Int = 48_000, channels: Int = 2, periodFrames: Int = 1024,
                maxWait: MediaTime = MediaTime(nanoseconds: 100_000_000),
                capacity: MediaTime = MediaTime(nanoseconds: 1_000_000_000),
                gains: [AudioSource: Float] = [:], outputSource: AudioSource = .app) {
        precondition(sampleRate > 0 && channels > 0 && periodFrames > 0)
        self.sampleRate = sampleRate
        self.channels = channels
        self.periodFrames = periodFrames
        self.maxWait = maxWait
        self.capacity = capacity
        self.outputSource = outputSource
        lanes = AudioSource.allCases.map { source in
            Lane(resampler: Resampler(outputRate: sampleRate, outputChannels: channels),
                 splitter: PeriodSplitter(sampleRate: sampleRate, periodFrames: periodFrames),
                 gain: gains[source] ?? 1)
        }
    }

    /// The factor `source`'s samples are scaled by before mixing.
    public func gain(for source: AudioSource) -> Float { lanes[slot(source)].gain }
    /// Scales `source` by `gain` from the next period on (1.0: unchanged, 0: muted).
    public mutating func setGain(_ gain: Float, for source: AudioSource) { lanes[slot(source)].gain = gain }

    /// Frames waiting in `source`'s queue (whole periods, not yet mixed).
    public func queuedFrames(_ source: AudioSource) -> Int { lanes[slot(source)].queuedPeriods * periodFrames }
    /// Frames of `source` dropped because its queue was over `capacity`.
    public func droppedFrames(_ source: AudioSource) -> Int64 { lanes[slot(source)].dropped }
    /// Frames of both sources dropped because a queue was over `capacity`.
    public var droppedFrames: Int64 { lanes.reduce(0) { $0 + $1.dropped } }
    /// Frames of `source` that came after their period was mixed, overlapped earlier audio or
    /// preceded the origin.
    public func lateFrames(_ source: AudioSource) -> Int64 {
        lanes[slot(source)].late + lanes[slot(source)].splitter.droppedFrames
    }

    /// Takes one buffer of either source, in any rate and channel count (normalized Float32).
    public mutating func append(_ buffer: AudioBuffer) {
        guard buffer.frameCount > 0 else { return }
        precondition(buffer.sampleRate > 0, "invalid sample rate")
        if origin == nil {
            origin = buffer.time
            for index in lanes.indices {
                lanes[index].splitter = PeriodSplitter(sampleRate: sampleRate, periodFrames: periodFrames, origin: buffer.time)
            }
        }
        let index = slot(buffer.source)
        lanes[index].finished = false
        lanes[index].noteDelivery(Int(Int64(buffer.frameCount) * Int64(sampleRate) / Int64(buffer.sampleRate)))
        for converted in lanes[index].resampler.process(buffer) {
            enqueue(lanes[index].splitter.append(converted), lane: index)
        }
        let cap = Int(capacity.value(timescale: Int64(sampleRate))) / periodFrames
        while lanes[index].queuedPeriods > max(cap, 1) {
            lanes[index].popFront()
            lanes[index].dropped += Int64(periodFrames)
        }
    }

    /// `source` has ended (the mic was turned off): its held-back audio is queued and nothing
    /// more is waited for from it until it delivers again.
    public mutating func finish(_ source: AudioSource) {
        let index = slot(source)
        if let tail = lanes[index].resampler.flush() { enqueue(lanes[index].splitter.append(tail), lane: index) }
        if let last = lanes[index].splitter.flush() { enqueue([last], lane: index) }
        lanes[index].finished = true
    }

    /// Every period that can be mixed now, oldest first.
    public mutating func nextPeriods() -> [AudioBuffer] {
        var periods: [AudioBuffer] = []
        while let period = mixNext() { periods.append(period) }
        return periods
    }

    /// Ends both sources and returns everything left.
    public mutating func finish() -> [AudioBuffer] {
        for source in AudioSource.allCases { finish(source) }
        return nextPeriods()
    }

    private mutating func mixNext() -> AudioBuffer? {
        guard let origin else { return nil }
        let period = Int64(periodFrames)
        while true {
            let cursor = nextPeriodIndex
            for index in lanes.indices {
                while let front = lanes[index].front, front.index < cursor {
                    lanes[index].popFront()
                    lanes[index].late += period
                }
            }
            let reach = lanes.map { $0.splitter.nextIndex ?? Int64.min }
            for index in lanes.indices where lanes[index].front == nil && !lanes[index].finished {
                if reach[index] >= (cursor + 1) * period { continue }  // gapped past this period
                let ahead = reach.indices.filter { $0 != index }.map { reach[$0] }.max() ?? Int64.min
                if ahead < (cursor + 1) * period + wait(index) { return nil }
            }
            guard let earliest = lanes.compactMap({ $0.front?.index }).min() else { return nil }
            if earliest > cursor {
                nextPeriodIndex = earliest  // nobody has audio here: skip, do not emit silence
                continue
            }
            var mix = [Float](repeating: 0, count: periodFrames * channels)
            for index in lanes.indices where lanes[index].front?.index == cursor {
                let gain = lanes[index].gain
                let samples = lanes[index].popFront()
                for sample in samples.indices where samples[sample].isFinite { mix[sample] += gain * samples[sample] }
            }
            limiter.process(&mix, channels: channels, sampleRate: sampleRate)
            nextPeriodIndex = cursor + 1
            return AudioBuffer(source: outputSource, time: origin + MediaTime.samples(cursor * period, rate: sampleRate),
                               sampleRate: sampleRate, channels: channels, samples: mix)
        }
    }

    /// Frames another source must be ahead before `lane` counts as absent.
    private func wait(_ lane: Int) -> Int64 {
        let base = maxWait.value(timescale: Int64(sampleRate))
        return min(base + Int64(lanes[lane].recentDeliveries.max() ?? 0), capacity.value(timescale: Int64(sampleRate)))
    }

    private mutating func enqueue(_ periods: [AudioBuffer], lane: Int) {
        guard let origin else { return }
        for period in periods {
            let index = (period.time - origin).value(timescale: Int64(sampleRate)) / Int64(periodFrames)
            if index < nextPeriodIndex {
                lanes[lane].late += Int64(periodFrames)
            } else {
                lanes[lane].queue.append((index, period.samples))
            }
        }
    }

    private func slot(_ source: AudioSource) -> Int {
        AudioSource.allCases.firstIndex(of: source)!  // never nil: allCases lists every case
    }
}

extension AudioMixer {
    /// One source's path into the mix.
    struct Lane: Sendable {
        var resampler: Resampler
        var splitter: PeriodSplitter
        var gain: Float
        /// Complete periods by grid index; `head` is the first not yet taken, so taking is O(1).
        var queue: [(index: Int64, samples: [Float])] = []
        var head = 0
        /// Sizes of the last few deliveries (frames at the mix rate): how bursty the source is.
        var recentDeliveries: [Int] = []
        var finished = false
        var dropped: Int64 = 0
        var late: Int64 = 0

        var queuedPeriods: Int { queue.count - head }
        var front: (index: Int64, samples: [Float])? { head < queue.count ? queue[head] : nil }

        @discardableResult
        mutating func popFront() -> [Float] {
            let samples = queue[head].samples
            queue[head].samples = []
            head += 1
            if head >= 64 && head * 2 >= queue.count {
                queue.removeFirst(head)
                head = 0
            }
            return samples
        }

        mutating func noteDelivery(_ frames: Int) {
            recentDeliveries.append(frames)
            if recentDeliveries.count > 8 { recentDeliveries.removeFirst() }
        }
    }

    /// A peak limiter that looks ahead within the period it is given, so it adds no latency.
    struct Limiter: Sendable {
        static let ceiling: Float = 0.99
        /// Gain can fall from 1 to 0 over this long before a peak (1 ms) ...
        static let attack = 0.001
        /// ... and rises back at this rate (from 0 to 1 in 100 ms).
        static let release = 0.1
        /// The gain at the end of the last period, where the next one continues from.
        var gain: Float = 1

        mutating func process(_ samples: inout [Float], channels: Int, sampleRate: Int) {
            let frames = samples.count / channels
            // The most gain each frame allows.
            var allowed = [Float](repeating: 1, count: frames)
            var limited = false
            for frame in 0..<frames {
                var peak: Float = 0
                for channel in 0..<channels { peak = max(peak, abs(samples[frame * channels + channel])) }
                if peak > Self.ceiling {
                    allowed[frame] = Self.ceiling / peak
                    limited = true
                }
            }
            guard limited || gain < 1 else { return }
            // Backwards: start falling before a peak. Forwards: rise back slowly. Each pass only
            // lowers a frame's gain, so no frame ends above what it allows.
            let attackStep = Float(1 / (Self.attack * Double(sampleRate)))
            let releaseStep = Float(1 / (Self.release * Double(sampleRate)))
            for frame in stride(from: frames - 2, through: 0, by: -1) {
                allowed[frame] = min(allowed[frame], allowed[frame + 1] + attackStep)
            }
            var current = gain
            for frame in 0..<frames {
                current = min(allowed[frame], current + releaseStep)
                for channel in 0..<channels {
                    // The clamp only absorbs rounding: x · (ceiling / peak) can land one ulp above.
                    let index = frame * channels + channel
                    samples[index] = min(max(samples[index] * current, -Self.ceiling), Self.ceiling)
                }
            }
            gain = current
        }
    }
}
