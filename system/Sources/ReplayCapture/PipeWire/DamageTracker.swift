/// What changed on the screen since the last picture was converted, from the damage metadata
/// the producer attaches to each frame (wlroots' portal does; a producer that does not leaves
/// it unknown). Every frame counts, also those dropped for a newer one: each frame's damage
/// is relative to the frame before it, so the next conversion must cover them all.
struct DamageTracker {
    struct Rect: Equatable {
        var x, y, width, height: Int
    }

    /// More rectangles than this are merged into their bounding box.
    static let limit = 16
    /// A conversion of damaged parts pays for a copy of the whole last picture: above this
    /// share of the screen converting everything is as cheap.
    static let worthwhileShare = 0.5

    /// nil when unknown: anything may have changed.
    private(set) var pending: [Rect]?

    /// Adds a frame's damage; nil when the frame said none (then anything may have changed).
    mutating func add(_ rects: [Rect]?) {
        guard let rects, var pending else {
            pending = nil
            return
        }
        pending.append(contentsOf: rects.filter { $0.width > 0 && $0.height > 0 })
        if pending.count > Self.limit { pending = [Self.bounds(of: pending)] }
        self.pending = pending
    }

    /// Forgets what is known: the next picture is converted whole (a new format, a new cast).
    mutating func invalidate() { pending = nil }

    /// The parts to convert for the next picture, on top of a copy of the last one, clipped
    /// to `width` x `height`; nil when the whole picture must be converted (unknown damage,
    /// or so much that a whole conversion is as cheap). Afterwards nothing is pending.
    mutating func takeParts(width: Int, height: Int) -> [Rect]? {
        defer { pending = [] }
        guard let pending else { return nil }
        let clipped = pending.compactMap { Self.evenClip($0, width: width, height: height) }
        let area = clipped.reduce(0) { $0 + $1.width * $1.height }
        guard Double(area) < Self.worthwhileShare * Double(width * height) else { return nil }
        return clipped
    }

    static func bounds(of rects: [Rect]) -> Rect {
        let x = rects.map(\.x).min() ?? 0, y = rects.map(\.y).min() ?? 0
        let right = rects.map { $0.x + $0.width }.max() ?? 0, bottom = rects.map { $0.y + $0.height }.max() ?? 0
        return Rect(x: x, y: y, width: right - x, height: bottom - y)
    }

    /// `rect` within the picture, grown to even edges (I420's chroma covers 2x2 pixels); nil
    /// when nothing of it is inside.
    static func evenClip(_ rect: Rect, width: Int, height: Int) -> Rect? {
        let left = max(0, rect.x) & ~1, top = max(0, rect.y) & ~1
        let right = min(width, (rect.x + rect.width + 1) & ~1), bottom = min(height, (rect.y + rect.height + 1) & ~1)
        guard right > left, bottom > top else { return nil }
        return Rect(x: left, y: top, width: right - left, height: bottom - top)
    }
}
