import ReplayCodec
import ReplayMedia
import Testing

/// The clip buffer's ring, with packets made up: 10 pictures a second with a keyframe every
/// second, and an audio packet every 20 ms.
@Suite struct PacketRingTests {
    struct Packet: RingPacket, Equatable {
        let time: MediaTime
        let byteCount: Int
        let startsClip: Bool
        let isVideo: Bool
    }

    /// `seconds` of a stream from `from` on, in encoding order (audio just after the picture it follows).
    static func stream(seconds: Int, from: Int = 0, pictureBytes: Int = 1000) -> [Packet] {
        var packets: [Packet] = []
        for tenth in (from * 10)..<((from + seconds) * 10) {
            let time = MediaTime(nanoseconds: Int64(tenth) * 100_000_000)
            packets.append(Packet(time: time, byteCount: tenth % 10 == 0 ? 10 * pictureBytes : pictureBytes, startsClip: tenth % 10 == 0,
                                  isVideo: true))
            for slice in 0..<5 {
                packets.append(Packet(time: time + MediaTime(nanoseconds: Int64(slice) * 20_000_000), byteCount: 100, startsClip: false,
                                      isVideo: false))
            }
        }
        return packets
    }

    @Test func itKeepsTheLengthAskedAndStartsOnAKeyframe() {
        var ring = PacketRing<Packet>(maxDuration: MediaTime(seconds: 30), maxBytes: 1 << 30)
        for packet in Self.stream(seconds: 45) { ring.append(packet) }
        // 30 s back from the newest (44.98 s) is 14.98 s: the group from 14 s is the last that
        // reaches there, so it stays; the one from 13 s went, as the rest still covers 30 s.
        #expect(ring.span >= MediaTime(seconds: 30) && ring.span < MediaTime(seconds: 31))
        let all = ring.last(nil)
        #expect(all.first?.startsClip == true && all.first?.time == MediaTime(seconds: 14))
        #expect(ring.last(MediaTime(seconds: 30)).first?.time == MediaTime(seconds: 14))
    }

    @Test func theByteBudgetEvictsWholeSecondsFromTheFront() {
        // A second costs 10000 + 9 * 1000 + 50 * 100 = 24000 bytes.
        var ring = PacketRing<Packet>(maxDuration: MediaTime(seconds: 600), maxBytes: 24_000 * 10)
        for packet in Self.stream(seconds: 60) { ring.append(packet) }
        #expect(ring.bytes <= 24_000 * 10)
        #expect(ring.bytes > 24_000 * 9, "more went than the budget needed: \(ring.bytes)")
        #expect(ring.last(nil).first?.startsClip == true)
        #expect(ring.last(nil).first?.time == MediaTime(seconds: 50))
    }

    @Test func aSaveStartsOnTheLastKeyframeAtOrBeforeWhatWasAsked() {
        var ring = PacketRing<Packet>(maxDuration: MediaTime(seconds: 30), maxBytes: 1 << 30)
        for packet in Self.stream(seconds: 40) { ring.append(packet) }
        // Newest at 39.98 s: 15 s back is 24.98 s, so the clip starts at the keyframe of 24 s.
        let clip = ring.last(MediaTime(seconds: 15))
        #expect(clip.first?.time == MediaTime(seconds: 24) && clip.first?.startsClip == true)
        #expect(clip.allSatisfy { !($0.time < MediaTime(seconds: 24)) })
        #expect(clip.filter(\.isVideo).count == 160)
        // Asking for more than is kept gives everything kept: from 9 s, the last group reaching 30 s back.
        #expect(ring.last(MediaTime(seconds: 300)).first?.time == MediaTime(seconds: 9))
    }

    @Test func audioEncodedJustBeforeTheKeyframeButHeardAfterItGoesAlong() {
        var ring = PacketRing<Packet>(maxDuration: MediaTime(seconds: 30), maxBytes: 1 << 30)
        for packet in Self.stream(seconds: 2) { ring.append(packet) }
        // Audio of 2.00 s arrives before the picture of 2.00 s.
        ring.append(Packet(time: MediaTime(seconds: 2), byteCount: 100, startsClip: false, isVideo: false))
        ring.append(Packet(time: MediaTime(seconds: 2), byteCount: 10_000, startsClip: true, isVideo: true))
        let clip = ring.last(.zero)
        #expect(clip.count == 2 && clip.contains { !$0.isVideo } && clip.contains(where: \.startsClip))
    }

    @Test func nothingBeforeTheFirstKeyframeIsKeptAndTheNewestGroupIsNeverCut() {
        var ring = PacketRing<Packet>(maxDuration: MediaTime(seconds: 1), maxBytes: 100)
        ring.append(Packet(time: .zero, byteCount: 100, startsClip: false, isVideo: false))
        #expect(ring.isEmpty)
        // One long group over both budgets: kept whole, since nothing could play a part of it.
        for packet in Self.stream(seconds: 1) { ring.append(packet) }
        for tenth in 10..<30 {
            ring.append(Packet(time: MediaTime(nanoseconds: Int64(tenth) * 100_000_000), byteCount: 1000, startsClip: false, isVideo: true))
        }
        #expect(ring.last(nil).first?.time == .zero && ring.count == 60 + 20)
        #expect(ring.last(nil).count == ring.count)
    }

    @Test func aLongRunKeepsItsMemoryBounded() {
        var ring = PacketRing<Packet>(maxDuration: MediaTime(seconds: 30), maxBytes: 1 << 30)
        for second in 0..<600 { for packet in Self.stream(seconds: 1, from: second) { ring.append(packet) } }
        #expect(ring.count <= 32 * 60)
        #expect(ring.bytes <= 32 * 24_000)
    }

    /// A spilling clip buffer takes the newest packets still in memory and puts them back as
    /// one entry held elsewhere: the newest run that passes the test, replaced in place.
    @Test func theNewestRunIsTakenAndReplacedInPlace() {
        var ring = PacketRing<Packet>(maxDuration: MediaTime(seconds: 30), maxBytes: 1 << 30)
        let stream = Self.stream(seconds: 3)
        for packet in stream { ring.append(packet) }
        // The newest run of audio packets: the five after the last picture.
        let run = ring.newest(while: { !$0.isVideo })
        #expect(Array(run) == Array(stream.suffix(5)))
        #expect(ring.newest(while: { _ in false }).isEmpty)
        #expect(ring.newest(while: { _ in true }).count == ring.count)
        // The last second (a keyframe and what follows it) as one entry of the same bytes.
        let lastSecond = ring.newest(while: { $0.time >= MediaTime(seconds: 2) })
        let group = Packet(time: MediaTime(seconds: 2), byteCount: lastSecond.reduce(0) { $0 + $1.byteCount }, startsClip: true, isVideo: true)
        ring.replaceNewest(lastSecond.count, with: [group])
        #expect(ring.last(nil).last == group && ring.count == stream.count - lastSecond.count + 1)
        #expect(ring.bytes == stream.reduce(0) { $0 + $1.byteCount })
        #expect(ring.last(.zero) == [group], "the newest keyframe entry starts what the newest time asks")
        #expect(ring.oldest == stream.first)
    }
}
