public import ReplayMedia

/// Streaming sample-rate conversion to one output rate (48 kHz by default) and channel
/// count, for sources that deliver 44.1, 32, 16 or 96 kHz audio in buffers of any size.
///
/// Design: a polyphase windowed-sinc FIR (Kaiser window, β = 8, about 80 dB of stopband) at
/// the exact rational ratio out/in. Each output sample is a 2·32-tap dot product around its
/// exact input position (more taps when decimating, where the cutoff follows the output's
/// Nyquist), so a tone keeps its frequency and level, and nothing above 0.9 × the lower
/// Nyquist folds back. The input tail that the next output still needs is kept between
/// calls, so buffer boundaries are invisible: the output is the same whether the input came
/// in one piece or in 100-frame crumbs. The filter is centred, so output sample n is stamped
/// exactly start + n / outputRate with no latency to correct; the last taps' worth of input is
/// held back until more arrives or `flush()`.
///
/// Timestamps come from the sample count, not from each buffer's stamp: stamps within
/// `discontinuity` (20 ms) of where the stream should be are jitter and are ignored. A
/// larger jump, or a change of rate or channel count, ends the segment (its tail is flushed)
/// and starts a new one at the new stamp, so a real gap reaches `PeriodSplitter` intact.
///
/// Channels are mapped after conversion: mono is copied to every output channel, any input
/// down to mono is averaged, and otherwise output channel c takes input channel c (channels
/// beyond the input's repeat it cyclically, extra input channels are dropped).
public struct Resampler: Sendable {
    /// Frames per second of the output.
    public let outputRate: Int
    /// Channels of the output.
    public let outputChannels: Int
    /// How far a buffer's stamp may stray from where the segment's audio ends before it
    /// starts a new segment.
    public let discontinuity: MediaTime

    private var segment: Segment?
    /// The last kernel built, reused when a new segment has the same rates.
    private var kernel: Kernel?

    /// A resampler to `outputRate` and `outputChannels`, from whatever rate each buffer has.
    public init(outputRate: Int = 48_000, outputChannels: Int = 2,
                discontinuity: MediaTime = MediaTime(nanoseconds: 20_000_000)) {
        precondition(outputRate > 0 && outputChannels > 0)
        self.outputRate = outputRate
        self.outputChannels = outputChannels
        self.discontinuity = discontinuity
    }

    /// The converted audio for `buffer`: usually one buffer (possibly none while the first
    /// taps fill), two when a discontinuity flushed the previous segment first.
    public mutating func process(_ buffer: AudioBuffer) -> [AudioBuffer] {
        guard buffer.frameCount > 0 else { return [] }
        var output: [AudioBuffer] = []
        if let current = segment, !current.continues(with: buffer, tolerance: discontinuity) {
            if let tail = flush() { output.append(tail) }
        }
        if segment == nil {
            let reusable = kernel.flatMap { $0.matches(buffer.sampleRate, outputRate) ? $0 : nil }
            let built = reusable ?? (buffer.sampleRate == outputRate ? nil : Kernel(inputRate: buffer.sampleRate, outputRate: outputRate))
            if built != nil { kernel = built }
            segment = Segment(start: buffer.time, source: buffer.source, inputRate: buffer.sampleRate,
                              channels: buffer.channels, kernel: built)
        }
        segment?.append(buffer.samples)
        if let converted = emit(final: false) { output.append(converted) }
        return output
    }

    /// Everything still held back (the filter's look-ahead), as if the input were followed by
    /// silence; ends the segment, so the next buffer starts a new one at its own stamp.
    public mutating func flush() -> AudioBuffer? {
        guard segment != nil else { return nil }
        segment?.padForFlush()
        let tail = emit(final: true)
        segment = nil
        return tail
    }

    private mutating func emit(final: Bool) -> AudioBuffer? {
        guard let first = segment?.outputFrames, let raw = segment?.convert(final: final), !raw.isEmpty,
              let current = segment else { return nil }
        return AudioBuffer(source: current.source, time: current.start + MediaTime.samples(first, rate: outputRate),
                           sampleRate: outputRate, channels: outputChannels,
                           samples: Self.map(raw, from: current.channels, to: outputChannels))
    }

    /// Interleaved `samples` with `input` channels as `output` channels (see the type's note).
    public static func map(_ samples: [Float], from input: Int, to output: Int) -> [Float] {
        guard input != output else { return samples }
        let frames = samples.count / input
        return [Float](unsafeUninitializedCapacity: frames * output) { mapped, initialized in
            samples.withUnsafeBufferPointer { source in
                for frame in 0..<frames {
                    let base = frame * input
                    if output == 1 {
                        var sum: Float = 0
                        for channel in 0..<input { sum += source[base + channel] }
                        mapped[frame] = sum / Float(input)
                    } else {
                        for channel in 0..<output { mapped[frame * output + channel] = source[base + channel % input] }
                    }
                }
            }
            initialized = frames * output
        }
    }
}

extension Resampler {
    /// One stretch of contiguous input and the output made from it so far.
    struct Segment: Sendable {
        let start: MediaTime
        let source: AudioSource
        let inputRate: Int
        let channels: Int
        /// Nil when the rates are equal: samples pass straight through.
        let kernel: Kernel?
        /// Interleaved input frames; frame 0 is input frame `historyStart` (negative for the
        /// silence the first outputs' left taps read).
        var history: [Float]
        var historyStart: Int64
        var inputFrames: Int64 = 0
        var outputFrames: Int64 = 0

        init(start: MediaTime, source: AudioSource, inputRate: Int, channels: Int, kernel: Kernel?) {
            self.start = start
            self.source = source
            self.inputRate = inputRate
            self.channels = channels
            self.kernel = kernel
            let lead = kernel.map { $0.halfWidth - 1 } ?? 0
            history = [Float](repeating: 0, count: lead * channels)
            historyStart = -Int64(lead)
        }

        func continues(with buffer: AudioBuffer, tolerance: MediaTime) -> Bool {
            guard buffer.sampleRate == inputRate, buffer.channels == channels, buffer.source == source else { return false }
            let expected = start + MediaTime.samples(inputFrames, rate: inputRate)
            return abs((buffer.time - expected).nanoseconds) <= tolerance.nanoseconds
        }

        mutating func append(_ samples: [Float]) {
            history += samples
            inputFrames += Int64(samples.count / channels)
        }

        /// Silence after the last input so the final outputs' right taps have something to read.
        mutating func padForFlush() {
            history += [Float](repeating: 0, count: (kernel?.halfWidth ?? 0) * channels)
        }

        /// Every output sample whose taps are all available (with `final`, up to the end of
        /// the real input and no further), in input channels.
        mutating func convert(final: Bool) -> [Float] {
            guard let kernel else {
                let available = Int(inputFrames - outputFrames)
                let output = Array(history.suffix(available * channels))
                history.removeAll(keepingCapacity: true)
                historyStart = inputFrames
                outputFrames = inputFrames
                return output
            }
            let historyEnd = historyStart + Int64(history.count / channels)
            var output: [Float] = []
            let taps = kernel.taps, half = Int64(kernel.halfWidth), channels = channels
            history.withUnsafeBufferPointer { input in
                kernel.coefficients.withUnsafeBufferPointer { table in
                    while true {
                        // An output past the end of the real input belongs to the next buffer.
                        if final && outputFrames * kernel.down >= inputFrames * kernel.up { break }
                        let (position, phase) = kernel.position(of: outputFrames)
                        guard position + half < historyEnd else { break }
                        let base = Int(position - half + 1 - historyStart) * channels
                        let row = phase * taps
                        for channel in 0..<channels {
                            var sum: Float = 0
                            var index = base + channel
                            for tap in 0..<taps {
                                sum += table[row + tap] * input[index]
                                index += channels
                            }
                            output.append(sum)
                        }
                        outputFrames += 1
                    }
                }
            }
            // Keep only what the next output's left taps still read.
            let keepFrom = kernel.position(of: outputFrames).input - half + 1
            let drop = Int(min(max(0, keepFrom - historyStart), historyEnd - historyStart))
            if drop > 0 {
                history.removeFirst(drop * channels)
                historyStart += Int64(drop)
            }
            return output
        }
    }

    /// The polyphase table for one rate pair.
    struct Kernel: Sendable {
        let inputRate: Int
        let outputRate: Int
        /// Output sample n sits at input position n · down / up.
        let up: Int64
        let down: Int64
        /// Taps each side of the output position, in input samples.
        let halfWidth: Int
        let phases: Int
        let coefficients: [Float]
        var taps: Int { 2 * halfWidth }

        /// Zero crossings of the sinc kept each side at unity ratio; Kaiser β; cutoff as a
        /// fraction of the lower Nyquist frequency.
        static let zeroCrossings = 32.0
        static let beta = 8.0
        static let cutoff = 0.9
        /// Exact phases up to this many; beyond it (odd rate pairs) the nearest of this many,
        /// a timing error under 1/8192 sample (about -70 dB at the cutoff).
        static let maxPhases = 4096

        init(inputRate: Int, outputRate: Int) {
            precondition(inputRate > 0, "invalid input sample rate")
            func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
            let divisor = gcd(inputRate, outputRate)
            self.inputRate = inputRate
            self.outputRate = outputRate
            up = Int64(outputRate / divisor)
            down = Int64(inputRate / divisor)
            phases = min(Int(up), Self.maxPhases)
            // Decimating moves the cutoff down to the output's Nyquist and widens the filter
            // by the same factor, keeping the same number of zero crossings.
            let scale = min(1, Double(outputRate) / Double(inputRate))
            let bandwidth = Self.cutoff * scale  // sinc(bandwidth · t): cutoff = bandwidth / 2 cycles per input sample
            let half = Int((Self.zeroCrossings / scale).rounded(.up))
            halfWidth = half
            var table = [Float](repeating: 0, count: phases * 2 * half)
            let window = Self.besselI0(Self.beta)
            for phase in 0..<phases {
                let offset = Double(phase) / Double(phases)
                var row = [Double](repeating: 0, count: 2 * half)
                for tap in 0..<(2 * half) {
                    let t = Double(tap - half + 1) - offset  // input sample's distance from the output position
                    let x = t / Double(half)
                    guard abs(x) < 1 else { continue }
                    let sinc = t == 0 ? 1 : Self.sin(Double.pi * bandwidth * t) / (Double.pi * bandwidth * t)
                    row[tap] = bandwidth * sinc * Self.besselI0(Self.beta * (1 - x * x).squareRoot()) / window
                }
                // Unity gain at DC in every phase, or a constant would pick up a ripple at the phase rate.
                let sum = row.reduce(0, +)
                for tap in 0..<(2 * half) { table[phase * 2 * half + tap] = Float(row[tap] / sum) }
            }
            coefficients = table
        }

        func matches(_ input: Int, _ output: Int) -> Bool { inputRate == input && outputRate == output }

        /// The input frame at or before output `n` and the filter phase for the remainder.
        func position(of n: Int64) -> (input: Int64, phase: Int) {
            let exact = n * down
            var input = exact / up
            let remainder = exact % up
            if phases == Int(up) { return (input, Int(remainder)) }
            var phase = Int((remainder * Int64(phases) + up / 2) / up)
            if phase == phases {
                phase = 0
                input += 1
            }
            return (input, phase)
        }

        /// The modified Bessel function of the first kind, order 0 (Kaiser's window).
        static func besselI0(_ x: Double) -> Double {
            var sum = 1.0, term = 1.0, k = 1.0
            let quarter = x * x / 4
            repeat {
                term *= quarter / (k * k)
                sum += term
                k += 1
            } while term > sum * 1e-16
            return sum
        }

        /// sin without Glibc: ReplayProcessing stays pure Swift. Range-reduced Taylor series,
        /// accurate to double precision for the arguments the table needs.
        static func sin(_ x: Double) -> Double {
            var r = x.truncatingRemainder(dividingBy: 2 * Double.pi)
            if r > Double.pi { r -= 2 * Double.pi } else if r < -Double.pi { r += 2 * Double.pi }
            // Fold into [-π/2, π/2] where the series converges fast.
            if r > Double.pi / 2 { r = Double.pi - r } else if r < -Double.pi / 2 { r = -Double.pi - r }
            let r2 = r * r
            var term = r, sum = r, n = 1.0
            repeat {
                term *= -r2 / ((2 * n) * (2 * n + 1))
                sum += term
                n += 1
            } while abs(term) > 1e-17
            return sum
        }
    }
}
