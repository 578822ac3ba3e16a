public import ReplayMedia

/// Puts pictures that come when the screen changes onto a constant frame rate's grid: frame
/// `i` of the movie is shown at i / fps, for every i from 0 on, none missing and none twice.
///
/// A picture goes into the slot nearest its movie time; the slots it skipped (a still screen,
/// a slow capture) get the previous picture again, the same buffer, which an encoder codes
/// for next to nothing. A picture whose slot is already filled (capture jitter put two in
/// one frame's time) takes the next slot only when it came within a tenth of a frame of where
/// that slot would have been its nearest: a capture paced half a frame off the grid keeps
/// every picture, at most 0.6 of a frame late. Any other such picture is dropped: moved a
/// whole frame, it would take the next picture's slot, that one the one after, and the rest
/// of the movie would be a frame late. Holding each picture until its slot is over would keep
/// the newest, but needs a timer and delays every frame by up to the capture's still repeat.
public struct ConstantFrameRate<Picture> {
    /// One frame to encode.
    public struct Frame {
        /// The picture to encode: a new one, or the previous one again.
        public let picture: Picture
        /// Its place on the grid: shown from `index / fps` to `(index + 1) / fps`.
        public let index: Int64
        /// When it is shown in the movie: exactly `index / fps`.
        public let time: MediaTime
        /// The previous picture shown again (or, before the first, the first shown early).
        public let isRepeat: Bool
    }

    /// Frames a second: the grid's step is 1 / fps.
    public let fps: Int
    /// The first slot not filled yet: also how many frames were handed out.
    public private(set) var nextIndex: Int64 = 0
    /// Pictures left out because their slot was filled and the next one was too far.
    public private(set) var dropped = 0
    /// Pictures put one slot after their own, which was taken.
    public private(set) var delayed = 0
    /// How close to the next slot a picture whose own slot was taken must have come to be put
    /// in it: a tenth of a frame (in the 1/(fps · 10⁹) s of `place`), room for capture jitter.
    private static var jitterTolerance: Int64 { 100_000_000 }
    private var last: Picture?

    /// A grid of `fps` frames a second, starting at movie time zero.
    public init(fps: Int) {
        precondition(fps > 0, "a frame rate is positive")
        self.fps = fps
    }

    /// The frames that bring the movie up to `picture`, shown from `time` (the movie's):
    /// repeats of the previous picture for the slots before its own, then `picture`; none
    /// when it is dropped.
    public mutating func place(_ picture: Picture, at time: MediaTime) -> [Frame] {
        let ticks = max(0, time.nanoseconds) * Int64(fps)  // the time in 1/(fps · 10⁹) s
        var slot = (ticks + 500_000_000) / 1_000_000_000
        if slot < nextIndex {
            // Slot nextIndex starts being the nearest at nextIndex - ½ frames.
            let early = (nextIndex * 1_000_000_000 - 500_000_000) - ticks
            guard early <= Self.jitterTolerance else {
                dropped += 1
                return []
            }
            slot = nextIndex
            delayed += 1
        }
        // Before the first picture there is nothing to repeat: the movie opens on it.
        var frames = repeats(of: last ?? picture, upTo: slot)
        frames.append(frame(picture, isRepeat: false))
        last = picture
        return frames
    }

    /// The frames that hold the last picture up to `end`, the movie's duration: the grid's
    /// slots before the one nearest `end`, so the movie has round(end · fps) frames (or one more,
    /// when a picture came in the last half frame).
    public mutating func finish(at end: MediaTime) -> [Frame] {
        guard let last else { return [] }
        let slots = (max(0, end.nanoseconds) * Int64(fps) + 500_000_000) / 1_000_000_000
        return repeats(of: last, upTo: slots)
    }

    private mutating func repeats(of picture: Picture, upTo slot: Int64) -> [Frame] {
        guard slot > nextIndex else { return [] }
        var frames: [Frame] = []
        frames.reserveCapacity(Int(slot - nextIndex) + 1)
        while nextIndex < slot { frames.append(frame(picture, isRepeat: true)) }
        return frames
    }

    private mutating func frame(_ picture: Picture, isRepeat: Bool) -> Frame {
        defer { nextIndex += 1 }
        return Frame(picture: picture, index: nextIndex, time: .samples(nextIndex, rate: fps), isRepeat: isRepeat)
    }
}

extension ConstantFrameRate: Sendable where Picture: Sendable {}
extension ConstantFrameRate.Frame: Sendable where Picture: Sendable {}
extension ConstantFrameRate.Frame: Equatable where Picture: Equatable {}
