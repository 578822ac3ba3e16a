import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import ReplaySystem
import ReplayCaptureModel

/// What a fragmented MP4 in the store really holds: its video track's frames, length and
/// codec, read from the file's boxes (moov's track headers, each whole fragment's trun).
///
/// A daemon killed mid-recording leaves a file that plays up to its last whole fragment; the
/// figures saved beside it a second earlier can be ahead of that. The store lists a recovered
/// movie by these figures instead, so "300 frames" means the file's 300. Pure Swift, so the
/// control daemon needs no FFmpeg for it.
struct FragmentedMovieFacts: Equatable {
    var videoFrames = 0
    /// Seconds of video, from the fragments' sample durations.
    var videoDuration = 0.0
    /// The video sample entry's four-character code (avc1, hvc1, hev1, av01), as a codec name.
    var videoCodec: String?

    /// Reads the movie at `url`; nil when it is no fragmented MP4 with a video track. Only
    /// box headers, moov and the moofs are read: a long movie's media data is never loaded.
    init?(contentsOf url: URL) {
        guard let file = try? FileDescriptor.open(url.path, flags: O_RDONLY), let length = try? file.size() else { return nil }
        let size = UInt64(length)
        func read(_ offset: UInt64, _ count: Int) -> [UInt8]? { file.bytes(count: count, at: Int64(offset)) }
        var boxes: [(type: String, content: [UInt8]?, isComplete: Bool)] = []
        var offset: UInt64 = 0
        while offset + 8 <= size, let header = read(offset, Int(min(16, size - offset))), let size32 = header.uint32(at: 0),
              let type = header.fourCC(at: 4) {
            var headerLength: UInt64 = 8
            var length = UInt64(size32)
            if size32 == 1 {
                guard let large = header.uint64(at: 8) else { break }
                length = large
                headerLength = 16
            } else if size32 == 0 {
                length = size - offset
            }
            guard length >= headerLength else { break }
            let isComplete = offset + length <= size
            // Only the small boxes that describe the movie are read whole.
            let wanted = (type == "moov" || type == "moof") && isComplete && length <= 64 << 20
            boxes.append((type, wanted ? read(offset + headerLength, Int(length - headerLength)) : nil, isComplete))
            offset += length
        }
        self.init(boxes: boxes)
    }

    /// A movie already in memory.
    init?(bytes: [UInt8]) {
        self.init(boxes: Box.children(of: bytes, in: 0..<bytes.count).map { box in
            (box.type, box.isComplete ? Array(bytes[box.content]) : nil, box.isComplete)
        })
    }

    /// The file's top-level boxes in order, with the content of moov and each moof.
    private init?(boxes: [(type: String, content: [UInt8]?, isComplete: Bool)]) {
        var tracks: [UInt32: Track] = [:]
        var videoTrack: UInt32?
        var pendingFragment: (frames: Int, ticks: Int64)?
        for box in boxes {
            switch box.type {
            case "moov":
                guard let content = box.content else { return nil }
                tracks = Self.tracks(in: content)
                videoTrack = tracks.first { $0.value.isVideo }?.key
                videoCodec = videoTrack.flatMap { tracks[$0]?.codec }
            case "moof":
                guard let content = box.content, let videoTrack, let track = tracks[videoTrack] else {
                    pendingFragment = nil
                    continue
                }
                pendingFragment = Self.videoSamples(in: content, track: videoTrack, defaults: track)
            case "mdat":
                // A fragment counts once its media data is whole on disk.
                if let fragment = pendingFragment, box.isComplete, let videoTrack, let track = tracks[videoTrack], track.timescale > 0 {
                    videoFrames += fragment.frames
                    videoDuration += Double(fragment.ticks) / Double(track.timescale)
                }
                pendingFragment = nil
            default:
                continue
            }
        }
        guard videoTrack != nil else { return nil }
    }

    /// One track's header facts, and its fragments' defaults (trex).
    private struct Track {
        var timescale: UInt32 = 0
        var isVideo = false
        var codec: String?
        var defaultDuration: UInt32 = 0
    }

    private static func tracks(in bytes: [UInt8]) -> [UInt32: Track] {
        var tracks: [UInt32: Track] = [:]
        var defaults: [UInt32: UInt32] = [:]
        for child in Box.children(of: bytes, in: 0..<bytes.count) {
            if child.type == "trak", let (id, track) = track(in: bytes, trak: child) {
                tracks[id] = track
            } else if child.type == "mvex" {
                for trex in Box.children(of: bytes, in: child.content) where trex.type == "trex" {
                    // version/flags, track_ID, default_sample_description_index, default_sample_duration
                    if let id = bytes.uint32(at: trex.content.lowerBound + 4), let duration = bytes.uint32(at: trex.content.lowerBound + 12) {
                        defaults[id] = duration
                    }
                }
            }
        }
        for (id, duration) in defaults { tracks[id]?.defaultDuration = duration }
        return tracks
    }

    private static func track(in bytes: [UInt8], trak: Box) -> (UInt32, Track)? {
        var id: UInt32?
        var track = Track()
        for child in Box.children(of: bytes, in: trak.content) {
            if child.type == "tkhd", let version = bytes.uint32(at: child.content.lowerBound).map({ $0 >> 24 }) {
                id = bytes.uint32(at: child.content.lowerBound + (version == 1 ? 20 : 12))
            } else if child.type == "mdia" {
                for part in Box.children(of: bytes, in: child.content) {
                    let start = part.content.lowerBound
                    switch part.type {
                    case "mdhd":
                        let version = bytes.uint32(at: start).map { $0 >> 24 }
                        track.timescale = bytes.uint32(at: start + (version == 1 ? 20 : 12)) ?? 0
                    case "hdlr":
                        track.isVideo = bytes.fourCC(at: start + 8) == "vide"
                    case "minf":
                        track.codec = sampleEntry(in: bytes, minf: part)
                    default:
                        continue
                    }
                }
            }
        }
        return id.map { ($0, track) }
    }

    /// minf → stbl → stsd's first sample entry's type.
    private static func sampleEntry(in bytes: [UInt8], minf: Box) -> String? {
        guard let stbl = Box.children(of: bytes, in: minf.content).first(where: { $0.type == "stbl" }),
              let stsd = Box.children(of: bytes, in: stbl.content).first(where: { $0.type == "stsd" }) else { return nil }
        // version/flags, entry_count, then the first entry's size and type.
        guard let type = bytes.fourCC(at: stsd.content.lowerBound + 12) else { return nil }
        return ["avc1": "h264", "avc3": "h264", "hvc1": "hevc", "hev1": "hevc", "av01": "av1"][type] ?? type
    }

    /// The video track's sample count and ticks in one moof.
    private static func videoSamples(in bytes: [UInt8], track: UInt32, defaults: Track) -> (frames: Int, ticks: Int64) {
        var frames = 0
        var ticks: Int64 = 0
        for traf in Box.children(of: bytes, in: 0..<bytes.count) where traf.type == "traf" {
            var defaultDuration = defaults.defaultDuration
            var isVideo = false
            for part in Box.children(of: bytes, in: traf.content) {
                let start = part.content.lowerBound
                guard let flags = bytes.uint32(at: start).map({ $0 & 0xff_ffff }) else { continue }
                if part.type == "tfhd" {
                    isVideo = bytes.uint32(at: start + 4) == track
                    // Optional fields in order: base data offset (8), description index (4), default duration (4).
                    var offset = start + 8
                    if flags & 0x01 != 0 { offset += 8 }
                    if flags & 0x02 != 0 { offset += 4 }
                    if flags & 0x08 != 0, let duration = bytes.uint32(at: offset) { defaultDuration = duration }
                } else if part.type == "trun", isVideo, let count = bytes.uint32(at: start + 4) {
                    var offset = start + 8
                    if flags & 0x01 != 0 { offset += 4 }
                    if flags & 0x04 != 0 { offset += 4 }
                    let fields = [0x100, 0x200, 0x400, 0x800].filter { flags & UInt32($0) != 0 }.count
                    // A count no trun of ours reaches cannot make us loop for long.
                    for sample in 0..<Swift.min(Int(count), bytes.count) {
                        let duration = flags & 0x100 != 0 ? bytes.uint32(at: offset + sample * fields * 4) ?? 0 : defaultDuration
                        ticks += Int64(duration)
                    }
                    frames += Swift.min(Int(count), bytes.count)
                }
            }
        }
        return (frames, ticks)
    }
}

/// One ISO BMFF box: its type and where its content lies.
private struct Box {
    let type: String
    let content: Range<Int>
    /// False for a box whose stated size runs past the end of the file (cut off by a crash).
    let isComplete: Bool

    /// The boxes one after another in `range`; stops at a box that cannot be read.
    static func children(of bytes: [UInt8], in range: Range<Int>) -> [Box] {
        var boxes: [Box] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound, let size32 = bytes.uint32(at: offset), let type = bytes.fourCC(at: offset + 4) {
            var header = 8
            var size = Int(size32)
            if size32 == 1 {
                guard let large = bytes.uint64(at: offset + 8), large <= UInt64(Int.max) else { break }
                size = Int(large)
                header = 16
            } else if size32 == 0 {
                size = range.upperBound - offset
            }
            guard size >= header else { break }
            let end = offset + size
            boxes.append(Box(type: type, content: offset + header..<min(end, range.upperBound), isComplete: end <= range.upperBound))
            if end > range.upperBound { break }
            offset = end
        }
        return boxes
    }
}

extension [UInt8] {
    /// A big-endian number at `offset`, nil past the end.
    fileprivate func uint32(at offset: Int) -> UInt32? {
        guard offset >= 0, offset + 4 <= count else { return nil }
        return self[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    fileprivate func uint64(at offset: Int) -> UInt64? {
        guard offset >= 0, offset + 8 <= count else { return nil }
        return self[offset..<offset + 8].reduce(0) { $0 << 8 | UInt64($1) }
    }

    fileprivate func fourCC(at offset: Int) -> String? {
        guard offset >= 0, offset + 4 <= count else { return nil }
        return String(decoding: self[offset..<offset + 4], as: UTF8.self)
    }
}
