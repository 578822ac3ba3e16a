@_spi(OpenReplayKitInternal) import ReplayMedia
import Testing
@_spi(OpenReplayKitInternal) @testable import ReplayProcessing

@Suite struct InverseTelecineTests {
    /// A picture of noise, different for every `id`, with the id in its first four luma bytes.
    static func picture(_ id: Int, width: Int = 640, height: Int = 360) -> PixelBuffer {
        let pixels = PixelBuffer(width: width, height: height, format: .bt601VideoRange)
        let words = pixels.mutableBytes.bindMemory(to: UInt64.self)
        var state = UInt64(id + 1) &* 0x9e37_79b9_7f4a_7c15
        for index in words.indices {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            words[index] = state
        }
        pixels.mutableBytes.storeBytes(of: UInt32(id).littleEndian, as: UInt32.self)
        return pixels
    }

    static func id(of pixels: PixelBuffer) -> Int { Int(UInt32(littleEndian: pixels.bytes.loadUnaligned(as: UInt32.self))) }

    /// The same bytes in other memory, as a player drawing the same frame again produces.
    static func copy(_ pixels: PixelBuffer) -> PixelBuffer {
        pixels.copy()
    }

    /// Which original each captured frame shows when every original is shown for the next
    /// of `runs` (cycled) captured frames, for `frames` frames.
    static func schedule(runs: [Int], frames: Int, firstOriginal: Int = 0) -> [Int] {
        var originals: [Int] = []
        var original = firstOriginal
        while originals.count < frames {
            originals += Array(repeating: original, count: runs[(original - firstOriginal) % runs.count])
            original += 1
        }
        return Array(originals.prefix(frames))
    }

    struct Output {
        let id: Int
        let time: MediaTime
        /// The telecine was locked before this frame came in and stayed locked.
        let whileLocked: Bool
        /// The very picture of the frame that first showed this original.
        let isFirstShowing: Bool
    }

    /// Feeds frames showing `originals` at `rate` fps from `start` seconds. A repeated original
    /// is a byte copy (or, with `flagRepeats`, the same picture marked `isRepeat`).
    static func feed(
        _ telecine: inout InverseTelecine, originals: [Int], rate: Int, start: Double = 10,
        width: Int = 640, height: Int = 360, flagRepeats: Bool = false,
        afterEachFrame: (InverseTelecine) -> Void = { _ in }
    ) -> [Output] {
        var outputs: [Output] = []
        var shown: (id: Int, pixels: PixelBuffer)?
        for (index, original) in originals.enumerated() {
            let time = MediaTime(seconds: start) + .samples(Int64(index), rate: rate)
            let repeated = shown?.id == original
            let pixels = repeated ? (flagRepeats ? shown!.pixels : copy(shown!.pixels)) : picture(original, width: width, height: height)
            if !repeated { shown = (original, pixels) }
            let wasLocked = telecine.isLocked
            let emitted = telecine.process(VideoSample(time: time, pixels: pixels, isRepeat: repeated && flagRepeats))
            afterEachFrame(telecine)
            for output in emitted {
                #expect(output.pixels.storage === pixels.storage, "frames pass untouched")
                outputs.append(Output(
                    id: id(of: output.pixels), time: output.time, whileLocked: wasLocked && telecine.isLocked, isFirstShowing: !repeated))
            }
        }
        return outputs
    }

    /// After lock-in: each original once, in order, as first shown, on a uniform `rate` cadence.
    static func expectFilmCadence(_ outputs: [Output], rate: Int, originals: Set<Int>, sourceLocation: SourceLocation = #_sourceLocation) {
        let film = outputs.filter(\.whileLocked)
        #expect(film.count >= rate, "locked for at least a second", sourceLocation: sourceLocation)
        guard let first = film.first else { return }
        #expect(film.map(\.id) == Array(first.id..<first.id + film.count), "each original once, in order", sourceLocation: sourceLocation)
        #expect(film.allSatisfy { $0.isFirstShowing }, sourceLocation: sourceLocation)
        for (n, frame) in film.enumerated() {
            let due = first.time + .samples(Int64(n), rate: rate)
            #expect(abs((frame.time - due).nanoseconds) < 1_000_000, "frame \(n) at \(frame.time.seconds), due \(due.seconds)", sourceLocation: sourceLocation)
        }
        #expect(Set(outputs.map(\.id)) == originals, "no original lost, before lock-in either", sourceLocation: sourceLocation)
    }

    @Test(arguments: [
        (rate: 24, input: 30, runs: [2, 1, 1, 1]),
        (rate: 24, input: 30, runs: [1, 1, 2, 1]),
        (rate: 24, input: 60, runs: [3, 2]),
        (rate: 24, input: 60, runs: [2, 3]),
        (rate: 25, input: 30, runs: [2, 1, 1, 1, 1]),
        (rate: 25, input: 30, runs: [1, 1, 1, 2, 1]),
        (rate: 25, input: 60, runs: [2, 3, 2, 2, 3]),
        (rate: 25, input: 60, runs: [3, 2, 3, 2, 2]),
    ])
    func pulldownIsRemovedAndFilmFramesComeOutOnceOnTheirOwnCadence(rate: Int, input: Int, runs: [Int]) {
        var telecine = InverseTelecine(inputRate: input)
        let originals = Self.schedule(runs: runs, frames: input * 2)
        let outputs = Self.feed(&telecine, originals: originals, rate: input)
        #expect(telecine.isLocked && telecine.detectedRate == rate)
        Self.expectFilmCadence(outputs, rate: rate, originals: Set(originals))
    }

    @Test func lockInDoesNotDependOnWhereInThePatternTheFilmStarts() {
        for (rate, input, runs) in [(24, 30, [2, 1, 1, 1]), (24, 60, [3, 2]), (25, 30, [2, 1, 1, 1, 1]), (25, 60, [2, 3, 2, 2, 3])] {
            for skip in 0..<runs.reduce(0, +) {
                var telecine = InverseTelecine(inputRate: input)
                let originals = Array(Self.schedule(runs: runs, frames: input * 2 + skip).dropFirst(skip))
                var rates = Set<Int>()
                let outputs = Self.feed(&telecine, originals: originals, rate: input, width: 160, height: 90) {
                    if let locked = $0.detectedRate { rates.insert(locked) }
                }
                #expect(telecine.detectedRate == rate && rates == [rate], "\(rate) in \(input), from frame \(skip): locked on \(rates)")
                Self.expectFilmCadence(outputs, rate: rate, originals: Set(originals))
            }
        }
    }

    @Test func filmTimesFollowAJitteryCaptureClockWithoutDrift() {
        // 23.976 fps film captured at 29.97 for 20 s, each capture up to 0.8 ms late or early.
        var telecine = InverseTelecine(inputRate: 30)
        let originals = Self.schedule(runs: [2, 1, 1, 1], frames: 600)
        var film: [(id: Int, time: MediaTime)] = []
        for (index, original) in originals.enumerated() {
            let jitter = Int64(index * 7 % 5 - 2) * 400_000
            let time = MediaTime(nanoseconds: Int64(index) * 1_001_000_000_000 / 30_000 + jitter)
            let wasLocked = telecine.isLocked
            for output in telecine.process(VideoSample(time: time, pixels: Self.picture(original, width: 160, height: 90))) where wasLocked {
                film.append((Self.id(of: output.pixels), output.time))
            }
        }
        #expect(telecine.detectedRate == 24 && film.count > 450)
        for (frame, next) in zip(film, film.dropFirst()) {
            // Shown at 29.97 it is a 23.976 fps film: its own times are id * 1001/24000 s.
            let due = MediaTime(nanoseconds: Int64(frame.id) * 1_001_000_000_000 / 24_000)
            #expect(abs((frame.time - due).nanoseconds) < 2_000_000, "frame \(frame.id) at \(frame.time), due \(due)")
            #expect(abs((next.time - frame.time).nanoseconds - 41_708_333) < 1_000_000, "uniform steps")
        }
    }

    @Test func pulldownIsRemovedAt1080p() {
        var telecine = InverseTelecine(inputRate: 30)
        let originals = Self.schedule(runs: [1, 2, 1, 1], frames: 54)
        let outputs = Self.feed(&telecine, originals: originals, rate: 30, width: 1920, height: 1080)
        #expect(telecine.isLocked && telecine.detectedRate == 24)
        Self.expectFilmCadence(outputs, rate: 24, originals: Set(originals))
    }

    @Test func repeatsFlaggedByCaptureCountAsDuplicates() {
        var telecine = InverseTelecine(inputRate: 60)
        let originals = Self.schedule(runs: [3, 2], frames: 120)
        let outputs = Self.feed(&telecine, originals: originals, rate: 60, flagRepeats: true)
        #expect(telecine.detectedRate == 24)
        Self.expectFilmCadence(outputs, rate: 24, originals: Set(originals))
    }

    @Test(arguments: [30, 60])
    func nativeMovingContentPassesFrameForFrame(rate: Int) {
        var telecine = InverseTelecine(inputRate: rate)
        for index in 0..<(rate * 2) {
            let time = MediaTime(nanoseconds: 5_000_000_000 + Int64(index) * 1_000_000_000 / Int64(rate) + Int64(index % 3) * 700_000)
            let out = telecine.process(VideoSample(time: time, pixels: Self.picture(index)))
            #expect(out.count == 1 && out.first?.time == time && Self.id(of: out[0].pixels) == index)
            #expect(!telecine.isLocked)
        }
    }

    @Test(arguments: [30, 60])
    func staticContentPassesUnchangedAndNeverLocks(rate: Int) {
        var telecine = InverseTelecine(inputRate: rate)
        let still = Self.picture(7)
        for index in 0..<(rate * 2) {
            let time = MediaTime.samples(Int64(index), rate: rate)
            let pixels = index.isMultiple(of: 2) ? still : Self.copy(still)
            let out = telecine.process(VideoSample(time: time, pixels: pixels, isRepeat: index % 4 == 3))
            #expect(out.count == 1 && out.first?.time == time)
            #expect(!telecine.isLocked)
        }
    }

    @Test func otherInputRatesPassEverything() {
        var telecine = InverseTelecine(inputRate: 50)
        let originals = Self.schedule(runs: [2, 1, 1, 1], frames: 100)
        let outputs = Self.feed(&telecine, originals: originals, rate: 50)
        #expect(outputs.count == originals.count && !telecine.isLocked)
    }

    @Test func noOriginalIsDroppedAcrossTelecinedStaticAndNativeSegments() {
        var telecine = InverseTelecine(inputRate: 30)
        var originals = Self.schedule(runs: [2, 1, 1, 1], frames: 60)                     // 24 fps film
        originals += Array(repeating: originals.last!, count: 30)                           // paused
        originals += Array(originals.last! + 1...originals.last! + 30)                      // native 30p
        originals += Self.schedule(runs: [1, 2, 1, 1, 1], frames: 60, firstOriginal: originals.last! + 1)  // 25 fps film
        originals += Self.schedule(runs: [1, 1, 1, 2], frames: 45, firstOriginal: originals.last! + 1)     // 24 fps again
        originals += Array(repeating: originals.last!, count: 3)
        originals += Array(originals.last! + 1...originals.last! + 20)                      // native again
        var outputs = Self.feed(&telecine, originals: originals, rate: 30)
        #expect(Set(outputs.map(\.id)) == Set(originals), "every original out")
        #expect(outputs.map(\.id) == outputs.map(\.id).sorted(), "in order")
        #expect(zip(outputs, outputs.dropFirst()).allSatisfy { $0.time < $1.time }, "times increase")
        // While locked, nothing but film frames came out.
        outputs.removeAll { !$0.whileLocked }
        #expect(!outputs.isEmpty && outputs.allSatisfy { $0.isFirstShowing })
        #expect(!telecine.isLocked)
    }

    @Test func aDuplicateWhereAFilmFrameWasDueUnlocksAtOnceAndPasses() {
        var telecine = InverseTelecine(inputRate: 30)
        let originals = Self.schedule(runs: [2, 1, 1, 1], frames: 40)  // frame 40 is due to start original 32
        _ = Self.feed(&telecine, originals: originals, rate: 30)
        #expect(telecine.isLocked && originals.last == 31)
        let time = MediaTime(seconds: 10) + .samples(40, rate: 30)
        let again = Self.picture(31)
        let out = telecine.process(VideoSample(time: time, pixels: again))
        #expect(!telecine.isLocked && telecine.detectedRate == nil)
        #expect(out.count == 1 && out.first?.time == time && out.first?.pixels.storage === again.storage)
    }

    @Test func aNewFrameWhereAPulldownRepeatWasDueIsEmittedAndUnlocks() {
        var telecine = InverseTelecine(inputRate: 60)
        let originals = Self.schedule(runs: [3, 2], frames: 91)  // ends on the first of three showings of 36
        _ = Self.feed(&telecine, originals: originals, rate: 60)
        #expect(telecine.isLocked && originals.suffix(2) == [35, 36])
        let time = MediaTime(seconds: 10) + .samples(91, rate: 60)
        let early = Self.picture(37)
        let out = telecine.process(VideoSample(time: time, pixels: early))
        #expect(!telecine.isLocked && telecine.detectedRate == nil)
        #expect(out.count == 1 && out.first?.time == time && out.first?.pixels.storage === early.storage)
    }

    @Test func duplicatesAreExactlyTheSameBytesInEveryPlane() {
        let a = Self.picture(1, width: 1920, height: 1080)
        #expect(InverseTelecine.isDuplicate(a, a))
        #expect(InverseTelecine.isDuplicate(a, Self.copy(a)))
        #expect(!InverseTelecine.isDuplicate(a, Self.picture(2, width: 1920, height: 1080)))
        for plane in 0..<3 {
            // One byte off, away from the rows probed first, at the end of each plane.
            let b = Self.copy(a)
            let offset = a.offset(ofPlane: plane) + a.stride(ofPlane: plane) * (a.height(ofPlane: plane) - 1) + 11
            b.mutableBytes[offset] ^= 1
            #expect(!InverseTelecine.isDuplicate(a, b), "plane \(plane)")
        }
        // The same bytes coded another way are another picture.
        let relabelled = PixelBuffer(width: a.width, height: a.height, format: .bt709VideoRange) { $0.copyMemory(from: a.bytes) }
        #expect(!InverseTelecine.isDuplicate(a, relabelled))
        let small = Self.picture(1, width: 640, height: 360)
        #expect(!InverseTelecine.isDuplicate(small, Self.picture(1, width: 360, height: 640)))
    }
}
