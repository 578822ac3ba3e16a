public import ReplayMedia

/// What a ring needs to know of a packet.
public protocol RingPacket {
    /// Decode time from the movie's origin (monotonic within each track).
    var time: MediaTime { get }
    var byteCount: Int { get }
    /// A video keyframe: a clip may start here.
    var startsClip: Bool { get }
}

/// The last stretch of an encoded movie, in encoding order, bounded by time and by bytes.
/// It always begins at a keyframe: what is evicted is whole keyframe-started groups from the
/// front, so whatever it holds can be played from its start. A group goes for time only when
/// what is left still reaches `maxDuration` back, so a save of the whole length gets all of
/// it (up to a group more); for bytes, as soon as the budget is passed.
public struct PacketRing<Packet: RingPacket> {
    /// How far back it reaches at most (newest minus oldest).
    public let maxDuration: MediaTime
    /// What it may hold at most, counted as the packets' payloads.
    public let maxBytes: Int
    private var packets: [Packet] = []
    /// Where the live packets begin in `packets` (evicting moves this; the array is compacted now and then).
    private var head = 0
    public private(set) var bytes = 0

    public init(maxDuration: MediaTime, maxBytes: Int) {
        self.maxDuration = maxDuration
        self.maxBytes = maxBytes
    }

    public var count: Int { packets.count - head }
    public var isEmpty: Bool { count == 0 }

    /// The oldest packet held.
    public var oldest: Packet? { isEmpty ? nil : packets[head] }

    /// The newest packets `picked` accepts, back to the first it does not, oldest first.
    public func newest(while picked: (Packet) -> Bool) -> ArraySlice<Packet> {
        var start = packets.count
        while start > head, picked(packets[start - 1]) { start -= 1 }
        return packets[start...]
    }

    /// Puts `replacements` in place of the newest `count` packets: the same packets held
    /// another way (a clip buffer's group moved to disk, as one entry that starts where they did).
    public mutating func replaceNewest(_ count: Int, with replacements: [Packet]) {
        precondition(count <= self.count, "more packets replaced than held")
        let range = (packets.count - count)...
        bytes += replacements.reduce(0) { $0 + $1.byteCount } - packets[range].reduce(0) { $0 + $1.byteCount }
        packets.replaceSubrange(range, with: replacements)
    }

    /// From its oldest packet to its newest.
    public var span: MediaTime {
        guard let first = packets[head...].first, let last = packets.last else { return .zero }
        return last.time - first.time
    }

    /// Adds `packet` at the end, then evicts from the front whatever the budgets no longer
    /// allow. A packet before the first keyframe is not kept: nothing could play it.
    public mutating func append(_ packet: Packet) {
        if isEmpty && !packet.startsClip { return }
        packets.append(packet)
        bytes += packet.byteCount
        trim()
    }

    /// Drops the oldest group while over the byte budget, or while the rest still covers
    /// `maxDuration`; the newest group is kept whole, whatever it costs.
    private mutating func trim() {
        guard let newest = packets.last?.time else { return }
        while let next = packets[(head + 1)...].firstIndex(where: \.startsClip),
              bytes > maxBytes || newest - packets[next].time >= maxDuration {
            for index in head..<next { bytes -= packets[index].byteCount }
            head = next
        }
        // Compact once the dead front is as large as the live part: amortised O(1) a packet.
        if head > 1024 && head >= count {
            packets.removeFirst(head)
            head = 0
        }
    }

    /// The packets to play the last `duration` (nil: everything held): from the newest
    /// keyframe at or before the newest time minus `duration` (or the oldest there is) on,
    /// every packet not earlier than it, in the ring's order. (Audio heard just after the
    /// keyframe may have been encoded just before it; video before it is earlier, as decode
    /// times only grow.)
    public func last(_ duration: MediaTime?) -> [Packet] {
        guard let newest = packets.last?.time, !isEmpty else { return [] }
        let wanted = duration.map { newest - $0 }
        var start = head
        if let wanted {
            for index in head..<packets.count where packets[index].startsClip {
                if packets[index].time > wanted { break }
                start = index
            }
        }
        let from = packets[start].time
        return packets[head...].filter { !($0.time < from) }
    }
}
