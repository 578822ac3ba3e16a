#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
public import ReplayMedia

/// Real-time inverse telecine for screen content.
///
/// An app that plays a 24 or 25 fps film by drawing it to the screen shows each film frame
/// for a whole number of captured frames: at 30p `A A B C D` (24 fps), at 60p `A A A B B`
/// (24 fps, 3:2) or runs of 3 and 2 (25 fps). Once that pattern of exact duplicates has held
/// for 0.6 s, the duplicates are dropped and the film's frames re-timed on its own uniform
/// cadence. The first frame that breaks the pattern unlocks it: from then on every frame
/// passes with its own time until the pattern has held again. A frame that is not a
/// duplicate is never dropped, locked or not.
///
/// Used by one thread at a time; a picture is compared with the one before it, so the
/// previous picture stays referenced (one more buffer held from the capture pool).
public struct InverseTelecine: Sendable {
    /// The capture's frame rate: 30 or 60 (any other rate passes every frame unchanged).
    public let inputRate: Int
    /// The pulldowns that can appear at this input rate; none when it is not 30 or 60.
    private let cadences: [Cadence]
    /// How many frames of pattern must match before locking: three periods of the longest
    /// cadence. With fewer, 24-in-60 (3,2,3,2…) could be matched inside 25-in-60.
    private let window: Int
    /// One bit per recent frame, newest in bit 0: set when it showed a new picture.
    private var history: UInt64 = 0
    private var framesSeen = 0
    private var previous: PixelBuffer?
    private var lock: Lock?

    private struct Lock: Sendable {
        let cadence: Cadence
        /// Where the next frame falls in the cadence's period.
        var position: Int
        var clock: FilmClock
    }

    /// A detector for frames captured at `inputRate` frames per second.
    public init(inputRate: Int) {
        self.inputRate = inputRate
        cadences = inputRate == 30 || inputRate == 60 ? [24, 25].map { Cadence(contentRate: $0, inputRate: inputRate) } : []
        window = 3 * (cadences.map(\.period).max() ?? 0)
    }

    /// True while a pulldown pattern holds and its duplicates are being dropped.
    public var isLocked: Bool { lock != nil }

    /// The film's frame rate (24 or 25) while locked.
    public var detectedRate: Int? { lock?.cadence.contentRate }

    /// The frames to send for one captured frame: usually the frame itself (unlocked), the
    /// frame re-timed (locked, a new film frame) or nothing (locked, a pulldown duplicate).
    public mutating func process(_ sample: VideoSample) -> [VideoSample] {
        guard !cadences.isEmpty else { return [sample] }
        let isNew = !(sample.isRepeat || previous.map { Self.isDuplicate($0, sample.pixels) } ?? false)
        previous = sample.pixels
        history = (history << 1 | (isNew ? 1 : 0)) & (1 << window - 1)
        framesSeen = min(framesSeen + 1, window)

        guard var lock else {
            // The frame that completes the pattern still passes as it is; locking applies
            // from the next one, so the film clock starts on a new film frame.
            if framesSeen == window { self.lock = match() }
            return [sample]
        }
        let position = lock.position
        guard lock.cadence.isNew[position] == isNew else {
            self.lock = nil
            return [sample]
        }
        lock.position = (position + 1) % lock.cadence.period
        defer { self.lock = lock }
        guard isNew else { return [] }

        // When the film frame was due: its first showing, less how late the pulldown shows it.
        var retimed = sample
        retimed.time = lock.clock.time(forFrameDue: sample.time - lock.cadence.lag(at: position))
        return [retimed]
    }

    /// The cadence, and where in it the next frame falls, that explains the whole window.
    private func match() -> Lock? {
        for cadence in cadences {
            for end in 0..<cadence.period where cadence.signature(endingAt: end, length: window) == history {
                return Lock(cadence: cadence, position: (end + 1) % cadence.period, clock: FilmClock(rate: cadence.contentRate))
            }
        }
        return nil
    }

    /// True when both pictures have the same size, format and bytes in all three planes.
    ///
    /// Pictures that differ are cheap: 16 luma rows spread over the picture are compared
    /// first (a change taller than a sixteenth of it, such as a video in a window, crosses
    /// one), then everything, with a `memcmp` that stops at the first difference. Identical
    /// pictures must be compared to the last byte: one `memcmp` over both, memory-bound.
    public static func isDuplicate(_ a: PixelBuffer, _ b: PixelBuffer) -> Bool {
        guard a.width == b.width, a.height == b.height, a.format == b.format else { return false }
        // Capture repeating a picture may hand over the same memory; it is not rewritten
        // once shared.
        if a.storage === b.storage { return true }
        let first = a.baseAddress
        let second = b.baseAddress
        let probes = min(a.height, 16)
        for probe in 0..<probes {
            let row = (2 * probe + 1) * a.height / (2 * probes)
            if memcmp(first + row * a.width, second + row * a.width, a.width) != 0 { return false }
        }
        return memcmp(first, second, a.bytes.count) == 0
    }
}

/// One pulldown: which captured frames of its period show a new film frame.
///
/// Frame `i` shows film frame `⌊i · content / input⌋`, the even spread a player drawing on
/// vsync produces: 24 in 30 is `N D N N N`, 24 in 60 is `N D D N D`, 25 in 30 is
/// `N D N N N N`, 25 in 60 is runs of 3,2,3,2,2. Any rotation of it is the same cadence.
struct Cadence: Sendable {
    let contentRate: Int
    let inputRate: Int
    let isNew: [Bool]

    init(contentRate: Int, inputRate: Int) {
        self.contentRate = contentRate
        self.inputRate = inputRate
        let period = inputRate / gcd(contentRate, inputRate)
        isNew = (0..<period).map { $0 == 0 || $0 * contentRate / inputRate != ($0 - 1) * contentRate / inputRate }
    }

    var period: Int { isNew.count }

    /// How much later than its film time the film frame starting at `position` is shown.
    func lag(at position: Int) -> MediaTime {
        let filmFrame = position * contentRate / inputRate
        return MediaTime.samples(Int64(position), rate: inputRate) - MediaTime.samples(Int64(filmFrame), rate: contentRate)
    }

    /// The history bits `length` frames of this cadence leave when the newest is at `end`.
    func signature(endingAt end: Int, length: Int) -> UInt64 {
        var bits: UInt64 = 0
        for age in 0..<length where isNew[((end - age) % period + period) % period] {
            bits |= 1 << age
        }
        return bits
    }
}

/// Times film frames on a uniform cadence that follows the capture clock.
///
/// The cadence starts on the first frame's due time; frame `n` after it is timed
/// `anchor + n / rate`, and every frame's measured due time pulls the anchor an eighth of the
/// way toward it, so capture jitter barely moves the cadence while a capture clock slightly
/// off its nominal rate (29.97 for 30) is followed without drift. A jump of more than half a
/// film frame restarts the cadence there.
struct FilmClock: Sendable {
    let rate: Int
    private var anchor: MediaTime?
    private var count: Int64 = 0

    init(rate: Int) { self.rate = rate }

    mutating func time(forFrameDue due: MediaTime) -> MediaTime {
        guard var anchor else {
            self.anchor = due
            return due
        }
        defer { self.anchor = anchor }
        count += 1
        let error = (due - (anchor + .samples(count, rate: rate))).nanoseconds
        if abs(error) > 500_000_000 / Int64(rate) {
            anchor = due
            count = 0
        } else {
            anchor.nanoseconds += error / 8
        }
        return anchor + .samples(count, rate: rate)
    }
}

private func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
