import FoundationEssentials
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif
public import ReplayCodec
public import ReplayMedia

/// Encoded packets waiting to be sent, bounded in bytes: while the server is away the
/// stream keeps being encoded into here, and what does not fit is dropped a whole group of
/// pictures at a time from the oldest end, so what remains always starts decodable.
public final class PacketBacklog: @unchecked Sendable {
    // @unchecked: every stored property is guarded by `condition`.
    private let condition = ConditionLock()
    /// Sent and dropped slots are emptied at once, so their memory goes back straight away.
    private var packets: [EncodedPacket?] = []
    private var head = 0
    private var bytes = 0
    private var closed = false
    private var dropped = 0
    public let limitBytes: Int

    public init(limitBytes: Int) {
        self.limitBytes = limitBytes
    }

    public var bufferedBytes: Int { condition.withLock { bytes } }
    /// Packets dropped because the backlog was full.
    public var droppedPackets: Int { condition.withLock { dropped } }
    public var count: Int { condition.withLock { packets.count - head } }
    /// Time between the oldest and the newest packet waiting.
    public var bufferedDuration: MediaTime {
        condition.withLock {
            guard head < packets.count, let first = packets[head], let last = packets[packets.count - 1] else {
                return MediaTime(nanoseconds: 0)
            }
            return last.time - first.time
        }
    }

    public func append(_ new: [EncodedPacket]) {
        guard !new.isEmpty else { return }
        condition.withLock {
            packets += new.map { Optional($0) }
            bytes += new.reduce(0) { $0 + $1.byteCount }
            while bytes > limitBytes, head < packets.count { dropOldestGroup() }
            compact()
            condition.broadcast()
        }
    }

    /// The oldest packet, waiting up to `timeout` seconds for one; nil on time-out or once
    /// closed and empty. It stays queued until `removeFirst()`, so a packet whose sending
    /// failed is sent again on the next connection.
    public func first(timeout: Double) -> EncodedPacket? {
        condition.withLock {
            let deadline = Date().addingTimeInterval(timeout)
            while head == packets.count && !closed {
                if !condition.wait(until: deadline) { break }
            }
            return head < packets.count ? packets[head] : nil
        }
    }

    public func removeFirst() {
        condition.withLock {
            guard head < packets.count else { return }
            take()
            compact()
        }
    }

    /// For a new connection, which must begin with a picture that decodes on its own: drops
    /// what comes before the oldest video keyframe. False when no keyframe is queued yet
    /// (everything is dropped; ask the encoder for one).
    public func startAtKeyframe() -> Bool {
        condition.withLock {
            while head < packets.count, !isKeyframe(head) {
                take()
                dropped += 1
            }
            compact()
            return head < packets.count
        }
    }

    /// Wakes a waiting `first`; later `first` calls return what is left, then nil.
    public func close() {
        condition.withLock {
            closed = true
            condition.broadcast()
        }
    }

    public var isEmpty: Bool { condition.withLock { head == packets.count } }

    /// Drops up to the next video keyframe after the oldest packet (a whole group of
    /// pictures), or just the oldest packet when no later keyframe is queued.
    private func dropOldestGroup() {
        var end = head + 1
        while end < packets.count, !isKeyframe(end) { end += 1 }
        if end == packets.count { end = head + 1 }
        dropped += end - head
        while head < end { take() }
    }

    private func isKeyframe(_ index: Int) -> Bool {
        packets[index].map { $0.track == .video && $0.isKeyframe } ?? false
    }

    private func take() {
        bytes -= packets[head]?.byteCount ?? 0
        packets[head] = nil
        head += 1
    }

    private func compact() {
        if head > 256 && head * 2 > packets.count {
            packets.removeFirst(head)
            head = 0
        }
    }
}
