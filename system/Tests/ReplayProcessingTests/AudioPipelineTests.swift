import Foundation
import ReplayMedia
@testable import ReplayProcessing
import Testing

/// Hann-windowed Goertzel filter: the complex amplitude of `frequency` in `samples`, scaled so
/// that |result| is a sine's peak amplitude and its angle the cosine phase at the first sample.
func goertzel(_ samples: some Collection<Float>, frequency: Double, rate: Double) -> (re: Double, im: Double) {
    let count = samples.count
    let omega = 2 * Double.pi * frequency / rate, coefficient = 2 * cos(omega)
    var s1 = 0.0, s2 = 0.0, windowSum = 0.0
    for (index, sample) in samples.enumerated() {
        let window = 0.5 - 0.5 * cos(2 * Double.pi * Double(index) / Double(count))
        let s = Double(sample) * window + coefficient * s1 - s2
        s2 = s1
        s1 = s
        windowSum += window
    }
    // X(ω) = e^{-iω(N-1)} · (s[N-1] - e^{-iω} s[N-2])
    let yRe = s1 - cos(omega) * s2, yIm = sin(omega) * s2
    let angle = -omega * Double(count - 1)
    let scale = 2 / windowSum
    return ((yRe * cos(angle) - yIm * sin(angle)) * scale, (yRe * sin(angle) + yIm * cos(angle)) * scale)
}

func amplitude(_ value: (re: Double, im: Double)) -> Double { (value.re * value.re + value.im * value.im).squareRoot() }
func decibels(_ ratio: Double) -> Double { 20 * log10(ratio) }

/// `amplitude` · sin(2π f n / rate) for n in `frames`.
func tone(_ frequency: Double, amplitude: Double, rate: Int, frames: Range<Int>) -> [Float] {
    frames.map { Float(amplitude * sin(2 * Double.pi * frequency * Double($0) / Double(rate))) }
}

func int16Bytes(_ samples: [Float], bigEndian: Bool) -> [UInt8] {
    samples.flatMap { sample -> [UInt8] in
        let value = UInt16(bitPattern: Int16((Double(sample) * 32_767).rounded()))
        let ordered = bigEndian ? value.bigEndian : value.littleEndian
        return withUnsafeBytes(of: ordered) { Array($0) }
    }
}

func float32Bytes(_ samples: [Float], bigEndian: Bool) -> [UInt8] {
    samples.flatMap { sample -> [UInt8] in
        let ordered = bigEndian ? sample.bitPattern.bigEndian : sample.bitPattern.littleEndian
        return withUnsafeBytes(of: ordered) { Array($0) }
    }
}

@Suite struct AudioPipelineTests {
    let start = MediaTime(seconds: 1000)

    // MARK: The seed's case: iOS 12 app audio in 512 ms bursts, the mic in 23 ms buffers

    @Test func appToneInBurstsAndMicToneInPeriodsMixWithBothLevelsAndNoSeamAtBurstBoundaries() throws {
        let burst = 22_596, bursts = 8, micFrames = 1024
        let micBuffers = (burst * bursts + micFrames - 1) / micFrames
        let appAmplitude = 0.5, micAmplitude = 0.25
        let appFormat = PCMFormat(sampleRate: 44_100, channels: 1, encoding: .int16, endianness: .big)
        let micFormat = PCMFormat(sampleRate: 44_100, channels: 1, encoding: .float32, endianness: .little)

        // Delivered in arrival order: each mic buffer as it ends, each app burst 5 ms after it
        // ends (the mixer has to wait ~512 ms for the app). Stamps jitter by a few ms.
        enum Delivery { case app(Int), mic(Int) }
        var deliveries: [(arrival: Double, delivery: Delivery)] = []
        for index in 0..<bursts { deliveries.append((Double((index + 1) * burst) / 44_100 + 0.005, .app(index))) }
        for index in 0..<micBuffers { deliveries.append((Double((index + 1) * micFrames) / 44_100, .mic(index))) }
        deliveries.sort { $0.arrival < $1.arrival }

        var mixer = AudioMixer()
        var periods: [AudioBuffer] = []
        for (_, delivery) in deliveries {
            switch delivery {
            case .app(let index):
                let frames = index * burst..<(index + 1) * burst
                let jitter = index == 0 ? 0 : (index % 2 == 0 ? 3_000_000 : -2_000_000)
                let time = start + MediaTime.samples(Int64(frames.lowerBound), rate: 44_100) + MediaTime(nanoseconds: Int64(jitter))
                let bytes = int16Bytes(tone(440, amplitude: appAmplitude, rate: 44_100, frames: frames), bigEndian: true)
                mixer.append(try AudioNormalizer.normalize(bytes: bytes, format: appFormat, time: time, source: .app))
            case .mic(let index):
                let frames = index * micFrames..<(index + 1) * micFrames
                let time = start + MediaTime.samples(Int64(frames.lowerBound), rate: 44_100)
                    + MediaTime(nanoseconds: index % 3 == 1 ? 1_000_000 : 0)
                let bytes = float32Bytes(tone(1000, amplitude: micAmplitude, rate: 44_100, frames: frames), bigEndian: false)
                mixer.append(try AudioNormalizer.normalize(bytes: bytes, format: micFormat, time: time, source: .microphone))
            }
            periods += mixer.nextPeriods()
        }
        periods += mixer.finish()

        // Steady 1024-frame stereo periods at 48 kHz whose times are exactly continuous.
        #expect(periods.count >= 190)
        for (index, period) in periods.enumerated() {
            #expect(period.frameCount == 1024 && period.channels == 2 && period.sampleRate == 48_000)
            #expect(period.time == start + MediaTime.samples(Int64(index) * 1024, rate: 48_000))
        }
        let interleaved = periods.flatMap(\.samples)
        let left = stride(from: 0, to: interleaved.count, by: 2).map { interleaved[$0] }
        let right = stride(from: 1, to: interleaved.count, by: 2).map { interleaved[$0] }
        #expect(left == right)
        #expect(mixer.droppedFrames == 0)
        // Only the app audio from before the mixer learnt to wait for its bursts came too late.
        #expect(mixer.lateFrames(.app) < Int64(burst) * 48_000 / 44_100)
        #expect(mixer.lateFrames(.microphone) == 0)

        // From the second burst on, both tones in every period at their levels, nothing else.
        let appAtInt16 = appAmplitude * 32_767 / 32_768
        let steady = 25..<190
        for index in steady {
            let period = left[index * 1024..<(index + 1) * 1024]
            let app = amplitude(goertzel(period, frequency: 440, rate: 48_000))
            let mic = amplitude(goertzel(period, frequency: 1000, rate: 48_000))
            #expect(abs(decibels(app / appAtInt16)) < 1, "period \(index): 440 Hz at \(app)")
            #expect(abs(decibels(mic / micAmplitude)) < 1, "period \(index): 1 kHz at \(mic)")
            for other in [100.0, 700, 1500, 3000, 8000, 15000] {
                let level = amplitude(goertzel(period, frequency: other, rate: 48_000))
                #expect(decibels(level / appAtInt16) < -40, "period \(index): \(other) Hz at \(level)")
            }
        }

        // Sample for sample what one continuous 440 + 1000 Hz signal would be: a single
        // missing or repeated sample at a seam would be off by up to 0.03; the resampler and
        // Int16 rounding account for a few 1e-5.
        func ideal(_ n: Int) -> Float {
            Float(appAtInt16 * sin(2 * Double.pi * 440 * Double(n) / 48_000)
                + micAmplitude * sin(2 * Double.pi * 1000 * Double(n) / 48_000))
        }
        let worst = (steady.lowerBound * 1024..<steady.upperBound * 1024).map { abs(left[$0] - ideal($0)) }.max()!
        #expect(worst < 2e-4)

        // The 440 Hz tone's phase runs on across each burst boundary: a window straddling it
        // holds the same power as one inside a burst, and the phase an unbroken tone would have.
        for boundary in 2..<bursts {
            let seam = boundary * burst * 48_000 / 44_100
            let straddling = goertzel(left[seam - 512..<seam + 512], frequency: 440, rate: 48_000)
            let inside = goertzel(left[seam + 8_000..<seam + 9_024], frequency: 440, rate: 48_000)
            let expected = goertzel((seam - 512..<seam + 512).map(ideal), frequency: 440, rate: 48_000)
            #expect(abs(decibels(amplitude(straddling) / amplitude(inside))) < 0.05)
            let error = amplitude((straddling.re - expected.re, straddling.im - expected.im)) / amplitude(expected)
            #expect(error < 0.005, "burst boundary \(boundary): off an unbroken tone by \(error)")
        }
    }

    // MARK: Normalization

    @Test func bigEndianInputDecodesToTheSameSamplesAsLittleEndian() throws {
        let values: [Float] = [0, 0.5, -0.5, 0.25, -1, 0.999, 1e-3, -0.75]
        for encoding in PCMFormat.Encoding.allCases {
            var decoded: [PCMFormat.Endianness: [Float]] = [:]
            for endianness in PCMFormat.Endianness.allCases {
                let big = endianness == .big
                let bytes: [UInt8] = switch encoding {
                case .float32: float32Bytes(values, bigEndian: big)
                case .int16: int16Bytes(values, bigEndian: big)
                case .int32:
                    values.flatMap { value -> [UInt8] in
                        let raw = UInt32(bitPattern: Int32(max(-2_147_483_648, min(2_147_483_647, (Double(value) * 2_147_483_648).rounded()))))
                        return withUnsafeBytes(of: big ? raw.bigEndian : raw.littleEndian) { Array($0) }
                    }
                }
                let format = PCMFormat(sampleRate: 44_100, channels: 2, encoding: encoding, endianness: endianness)
                let buffer = try AudioNormalizer.normalize(bytes: bytes, format: format, time: start, source: .app)
                #expect(buffer.channels == 2 && buffer.frameCount == 4 && buffer.sampleRate == 44_100 && buffer.time == start)
                decoded[endianness] = buffer.samples
            }
            #expect(decoded[.big] == decoded[.little], "\(encoding)")
            for (sample, value) in zip(decoded[.big]!, values) { #expect(abs(sample - value) < 1e-4, "\(encoding)") }
        }
        // The same through an UnsafeRawBufferPointer, and planar input comes out interleaved.
        let planar = float32Bytes([1, 2, 3, -1, -2, -3].map { $0 / 4 }, bigEndian: true)
        let format = PCMFormat(sampleRate: 48_000, channels: 2, encoding: .float32, endianness: .big, interleaved: false)
        let buffer = try planar.withUnsafeBytes {
            try AudioNormalizer.normalize(bytes: $0, format: format, time: start, source: .microphone)
        }
        #expect(buffer.samples == [0.25, -0.25, 0.5, -0.5, 0.75, -0.75])
        #expect(buffer.source == .microphone)
    }

    @Test func malformedSizesAreRefusedWithClearErrors() {
        let int16Stereo = PCMFormat(sampleRate: 44_100, channels: 2, encoding: .int16, endianness: .big)
        #expect(throws: AudioNormalizer.Error.partialFrame(byteCount: 6, bytesPerFrame: 4)) {
            try AudioNormalizer.normalize(bytes: [UInt8](repeating: 0, count: 6), format: int16Stereo, time: start, source: .app)
        }
        #expect(AudioNormalizer.Error.partialFrame(byteCount: 6, bytesPerFrame: 4).description
            == "6 bytes is not a whole number of 4-byte frames (2 bytes left over)")
        #expect(throws: AudioNormalizer.Error.invalidChannelCount(0)) {
            try AudioNormalizer.normalize(bytes: [UInt8](), format: PCMFormat(sampleRate: 44_100, channels: 0), time: start, source: .app)
        }
        #expect(throws: AudioNormalizer.Error.invalidSampleRate(0)) {
            try AudioNormalizer.normalize(bytes: [UInt8](), format: PCMFormat(sampleRate: 0, channels: 1), time: start, source: .app)
        }
    }

    // MARK: Resampling

    @Test(arguments: [44_100, 32_000, 16_000, 96_000, 22_050])
    func resamplerPreservesAToneFrequencyAndEnergy(inputRate: Int) {
        let total = inputRate  // one second
        let input = tone(1000, amplitude: 0.8, rate: inputRate, frames: 0..<total)
        // Ragged pieces, from 7 frames to a 22,596-frame burst, fed one after another.
        var resampler = Resampler()
        var output: [AudioBuffer] = []
        var offset = 0, piece = 0
        let sizes = [100, 441, 1024, 7, 22_596, 333]
        while offset < total {
            let count = min(sizes[piece % sizes.count], total - offset)
            let buffer = AudioBuffer(source: .app, time: start + MediaTime.samples(Int64(offset), rate: inputRate),
                                     sampleRate: inputRate, channels: 1, samples: Array(input[offset..<offset + count]))
            output += resampler.process(buffer)
            offset += count
            piece += 1
        }
        if let tail = resampler.flush() { output.append(tail) }

        // Timestamps continue exactly from the sample count, and the length is the input's.
        var frames: Int64 = 0
        for buffer in output {
            #expect(buffer.sampleRate == 48_000 && buffer.channels == 2)
            #expect(buffer.time == start + MediaTime.samples(frames, rate: 48_000))
            frames += Int64(buffer.frameCount)
        }
        #expect(frames == 48_000)

        let interleaved = output.flatMap(\.samples)
        let left = stride(from: 0, to: interleaved.count, by: 2).map { interleaved[$0] }
        #expect(left == stride(from: 1, to: interleaved.count, by: 2).map { interleaved[$0] })
        // Away from the edges (where the filter reads silence before and after the tone).
        let middle = left[200..<47_800]
        let level = amplitude(goertzel(middle, frequency: 1000, rate: 48_000))
        #expect(abs(decibels(level / 0.8)) < 0.01)
        let energy = middle.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(middle.count)
        #expect(0.8 * 0.8 / 2 / energy > 0.99)
        let ideal = tone(1000, amplitude: 0.8, rate: 48_000, frames: 200..<47_800)
        #expect(zip(middle, ideal).map { abs($0 - $1) }.max()! < 1e-3)
    }

    @Test func whatTheOutputRateCannotHoldIsFilteredOutNotFoldedBack() {
        func level(of frequency: Double, from rate: Int) -> Double {
            var resampler = Resampler(outputChannels: 1)
            let input = AudioBuffer(source: .app, time: start, sampleRate: rate, channels: 1,
                                    samples: tone(frequency, amplitude: 1, rate: rate, frames: 0..<rate))
            let output = (resampler.process(input) + [resampler.flush()!]).flatMap(\.samples)[1_000..<47_000]
            return decibels((output.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(output.count) * 2).squareRoot())
        }
        #expect(level(of: 30_000, from: 96_000) < -60)  // would alias to 18 kHz
        #expect(level(of: 25_000, from: 96_000) < -60)  // would alias to 23 kHz
        #expect(abs(level(of: 15_000, from: 96_000)) < 0.01)
        #expect(abs(level(of: 18_000, from: 44_100)) < 0.01)
    }

    @Test func resamplingInPiecesEqualsResamplingInOnePiece() {
        let input = tone(440, amplitude: 0.5, rate: 44_100, frames: 0..<44_100)
        func run(_ sizes: [Int]) -> [Float] {
            var resampler = Resampler(outputChannels: 1)
            var output: [Float] = []
            var offset = 0, piece = 0
            while offset < input.count {
                let count = min(sizes[piece % sizes.count], input.count - offset)
                let buffer = AudioBuffer(source: .app, time: start + MediaTime.samples(Int64(offset), rate: 44_100),
                                         sampleRate: 44_100, channels: 1, samples: Array(input[offset..<offset + count]))
                output += resampler.process(buffer).flatMap(\.samples)
                offset += count
                piece += 1
            }
            return output + (resampler.flush()?.samples ?? [])
        }
        #expect(run([44_100]) == run([100, 1, 2_048, 17]))
    }

    @Test func channelsAreDuplicatedFromMonoAndAveragedToMono() {
        #expect(Resampler.map([0.5, -0.25], from: 1, to: 2) == [0.5, 0.5, -0.25, -0.25])
        #expect(Resampler.map([0.5, -0.25, 1, 0], from: 2, to: 1) == [0.125, 0.5])
        var resampler = Resampler(outputChannels: 1)
        let stereo = AudioBuffer(source: .microphone, time: start, sampleRate: 48_000, channels: 2,
                                 samples: [Float](repeating: 0, count: 200).enumerated().map { $0.offset % 2 == 0 ? 1 : 0 })
        let out = resampler.process(stereo)
        #expect(out.count == 1 && out[0].channels == 1 && out[0].samples.allSatisfy { $0 == 0.5 })
    }

    @Test func aStampJumpBeyondTwentyMillisecondsStartsANewSegmentAtTheNewStamp() {
        var resampler = Resampler(outputChannels: 1)
        let first = AudioBuffer(source: .app, time: start, sampleRate: 44_100, channels: 1, samples: [Float](repeating: 0.1, count: 4_410))
        let later = start + MediaTime(seconds: 0.5)
        let second = AudioBuffer(source: .app, time: later, sampleRate: 44_100, channels: 1, samples: [Float](repeating: 0.1, count: 4_410))
        let head = resampler.process(first)
        let out = resampler.process(second)
        #expect(out.count == 2)
        // The first segment's tail completes its 100 ms; the second starts at its own stamp.
        #expect(head.reduce(0) { $0 + $1.frameCount } + out[0].frameCount == 4_800)
        #expect(out[0].time == start + MediaTime.samples(Int64(head.reduce(0) { $0 + $1.frameCount }), rate: 48_000))
        #expect(out[1].time == later)
    }

    // MARK: Periods

    @Test func tinyBuffersAndBurstsBecomeExact1024FramePeriodsOnOneGrid() {
        var splitter = PeriodSplitter()
        var periods: [AudioBuffer] = []
        var frame = 0
        for size in [100, 100, 22_596, 100, 7, 24_594, 1] + [Int](repeating: 100, count: 50) {
            let samples = (frame..<frame + size).flatMap { [Float($0), -Float($0)] }
            // Stamps a few ms off, as capture stamps are.
            let jitter = MediaTime(nanoseconds: Int64(frame % 3) * 4_000_000)
            periods += splitter.append(AudioBuffer(source: .app, time: start + MediaTime.samples(Int64(frame), rate: 48_000) + jitter,
                                                   sampleRate: 48_000, channels: 2, samples: samples))
            frame += size
        }
        #expect(periods.count == frame / 1024)
        for (index, period) in periods.enumerated() {
            #expect(period.frameCount == 1024)
            #expect(period.time == start + MediaTime.samples(Int64(index) * 1024, rate: 48_000))
            let expected = (index * 1024..<(index + 1) * 1024).flatMap { [Float($0), -Float($0)] }
            #expect(period.samples == expected, "period \(index) has a gap or an overlap")
            #expect(abs((period.time - start).seconds - Double(index) * 1024 / 48_000) <= 1.0 / 48_000)
        }
        #expect(splitter.insertedFrames == 0 && splitter.droppedFrames == 0)
        #expect(splitter.pendingFrames == frame % 1024)
    }

    @Test func aGapIsReanchoredOnTheGridWithSilenceAtItsEdges() {
        var splitter = PeriodSplitter()
        func buffer(at frame: Int, count: Int) -> AudioBuffer {
            AudioBuffer(source: .app, time: start + MediaTime.samples(Int64(frame), rate: 48_000), sampleRate: 48_000, channels: 1,
                        samples: [Float](repeating: 1, count: count))
        }
        var periods = splitter.append(buffer(at: 0, count: 1_500))
        // 100 ms later than the sample count says: frames 1500..<6300 are a gap.
        periods += splitter.append(buffer(at: 6_300, count: 2_000))
        periods += splitter.flush().map { [$0] } ?? []
        #expect(periods.map { ($0.time - start).value(timescale: 48_000) } == [0, 1_024, 6_144, 7_168, 8_192])
        #expect(periods[1].samples == [Float](repeating: 1, count: 476) + [Float](repeating: 0, count: 548))
        #expect(periods[2].samples == [Float](repeating: 0, count: 156) + [Float](repeating: 1, count: 868))
        #expect(periods[4].samples == [Float](repeating: 1, count: 108) + [Float](repeating: 0, count: 916))
        // Audio stamped back over what was placed loses its overlapping head.
        var overlap = PeriodSplitter()
        _ = overlap.append(buffer(at: 0, count: 4_800))
        _ = overlap.append(buffer(at: 2_400, count: 4_800))
        #expect(overlap.droppedFrames == 2_400 && overlap.nextIndex == 7_200)
    }

    // MARK: Mixing

    @Test func mixingTwoFullScaleTonesNeverExceedsOne() {
        var mixer = AudioMixer()
        var periods: [AudioBuffer] = []
        let loud = 48_000, quiet = 24_000
        for index in 0..<(loud + quiet) / 960 {
            let frames = index * 960..<(index + 1) * 960
            let level = frames.lowerBound < loud ? 1.0 : 0.25
            let time = start + MediaTime.samples(Int64(frames.lowerBound), rate: 48_000)
            mixer.append(AudioBuffer(source: .app, time: time, sampleRate: 48_000, channels: 1,
                                     samples: tone(440, amplitude: level, rate: 48_000, frames: frames)))
            mixer.append(AudioBuffer(source: .microphone, time: time, sampleRate: 48_000, channels: 2,
                                     samples: tone(1000, amplitude: level, rate: 48_000, frames: frames).flatMap { [$0, $0] }))
            periods += mixer.nextPeriods()
        }
        periods += mixer.finish()
        let all = periods.flatMap(\.samples)
        #expect(all.count >= (loud + quiet) * 2)
        #expect(all.allSatisfy { abs($0) <= 1.0 })
        #expect(all.allSatisfy { abs($0) <= AudioMixer.Limiter.ceiling })
        // Limited, not clipped: both tones still there at similar levels.
        let left = stride(from: 0, to: loud * 2, by: 2).map { all[$0] }
        let app = amplitude(goertzel(left[4_800..<43_200], frequency: 440, rate: 48_000))
        let mic = amplitude(goertzel(left[4_800..<43_200], frequency: 1000, rate: 48_000))
        #expect(app > 0.3 && mic > 0.3 && abs(decibels(app / mic)) < 1)
        // And transparent again once the sum fits: the quiet tail is the exact sum.
        for n in (loud + 12_000)..<(loud + quiet - 1_024) {
            let sum = tone(440, amplitude: 0.25, rate: 48_000, frames: n..<n + 1)[0] + tone(1000, amplitude: 0.25, rate: 48_000, frames: n..<n + 1)[0]
            #expect(all[2 * n] == sum)
        }
    }

    @Test func perSourceGainScalesItsContribution() {
        var mixer = AudioMixer(gains: [.microphone: 0.5])
        mixer.setGain(2, for: .app)
        for source in AudioSource.allCases {
            mixer.append(AudioBuffer(source: source, time: start, sampleRate: 48_000, channels: 2,
                                     samples: [Float](repeating: 0.1, count: 2_048)))
        }
        let periods = mixer.finish()
        #expect(periods.count == 1 && periods[0].samples.allSatisfy { abs($0 - 0.25) < 1e-6 })
        #expect(mixer.gain(for: .app) == 2 && mixer.gain(for: .microphone) == 0.5)
    }

    // MARK: Bounded memory

    @Test func whenOneSourceStopsTheOtherIsMixedAloneAfterABoundedWait() {
        var mixer = AudioMixer()
        var periods: [AudioBuffer] = []
        let buffer = 1024, seconds = 5
        for index in 0..<seconds * 48_000 / buffer {
            let frames = index * buffer..<(index + 1) * buffer
            let time = start + MediaTime.samples(Int64(frames.lowerBound), rate: 48_000)
            mixer.append(AudioBuffer(source: .app, time: time, sampleRate: 48_000, channels: 1,
                                     samples: tone(440, amplitude: 0.5, rate: 48_000, frames: frames)))
            if frames.lowerBound < 24_000 {  // the mic stops after half a second, without a word
                mixer.append(AudioBuffer(source: .microphone, time: time, sampleRate: 48_000, channels: 1,
                                         samples: [Float](repeating: 0.1, count: buffer)))
            }
            periods += mixer.nextPeriods()
            // Never more than the 100 ms wait (plus the mic's 21 ms deliveries) and a period in hand.
            #expect(mixer.queuedFrames(.app) <= 4_800 + 1_024 + 2 * 1_024)
        }
        #expect(mixer.droppedFrames == 0)
        // The app kept coming out alone, exactly, with continuous period times.
        #expect(periods.count >= (seconds * 48_000 - 4_800 - 3 * 1_024) / 1_024)
        for (index, period) in periods.enumerated() {
            #expect(period.time == start + MediaTime.samples(Int64(index) * 1024, rate: 48_000))
        }
        let last = periods.last!
        let first = Int((last.time - start).value(timescale: 48_000))
        let expected = tone(440, amplitude: 0.5, rate: 48_000, frames: first..<first + 1024)
        #expect(stride(from: 0, to: 2_048, by: 2).map { last.samples[$0] } == expected)
    }

    @Test func queuesAreCappedAndOverflowIsCountedWhenNobodyDrains() {
        var mixer = AudioMixer()
        let buffer = 1024, total = 5 * 48_000
        for index in 0..<total / buffer {
            let time = start + MediaTime.samples(Int64(index * buffer), rate: 48_000)
            mixer.append(AudioBuffer(source: .app, time: time, sampleRate: 48_000, channels: 2,
                                     samples: [Float](repeating: 0.2, count: 2 * buffer)))
            if index * buffer < 24_000 {
                mixer.append(AudioBuffer(source: .microphone, time: time, sampleRate: 48_000, channels: 2,
                                         samples: [Float](repeating: 0.1, count: 2 * buffer)))
            }
            #expect(mixer.queuedFrames(.app) <= 48_000 && mixer.queuedFrames(.microphone) <= 48_000)
        }
        // 1 s holds 46 whole periods; the 188 before them were dropped, and counted.
        #expect(mixer.queuedFrames(.app) == 46 * 1024)
        #expect(mixer.droppedFrames(.app) == 188 * 1024 && mixer.droppedFrames(.microphone) == 0)
        #expect(mixer.droppedFrames == 188 * 1024)
        // Draining resumes: the mic's periods (with the app's silence), then the app's newest second.
        let periods = mixer.nextPeriods() + mixer.finish()
        let indexes = periods.map { ($0.time - start).value(timescale: 48_000) / 1024 }
        #expect(indexes == Array(0..<24) + Array(188..<234))
        #expect(periods.first!.samples.allSatisfy { $0 == Float(0.1) })
        #expect(periods.last!.samples.allSatisfy { $0 == Float(0.2) })
    }
}
