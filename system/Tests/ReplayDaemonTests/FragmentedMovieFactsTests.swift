import Foundation
import ReplayCaptureModel
@testable import ReplayDaemon
import Testing

/// The store's reading of a fragmented MP4: frames and length of the whole fragments only.
@Suite struct FragmentedMovieFactsTests {
    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        be32(UInt32(8 + payload.count)) + Array(type.utf8) + payload
    }

    static func be32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }

    /// version 0 and flags.
    static func full(_ flags: UInt32) -> [UInt8] { be32(flags & 0xff_ffff) }

    /// A moov with a video track (id 1, 90 kHz, `fourCC`) and an audio track (id 2), video
    /// fragments defaulting to `defaultDuration` ticks.
    static func moov(fourCC: String = "avc1", defaultDuration: UInt32 = 3000) -> [UInt8] {
        func trak(id: UInt32, handler: String, timescale: UInt32, entry: String) -> [UInt8] {
            let tkhd = box("tkhd", full(3) + be32(0) + be32(0) + be32(id) + [UInt8](repeating: 0, count: 68))
            let mdhd = box("mdhd", full(0) + be32(0) + be32(0) + be32(timescale) + be32(0) + be32(0))
            let hdlr = box("hdlr", full(0) + be32(0) + Array(handler.utf8) + [UInt8](repeating: 0, count: 13))
            let stsd = box("stsd", full(0) + be32(1) + box(entry, [UInt8](repeating: 0, count: 16)))
            return box("trak", tkhd + box("mdia", mdhd + hdlr + box("minf", box("stbl", stsd))))
        }
        let trex = box("trex", full(0) + be32(1) + be32(1) + be32(defaultDuration) + be32(0) + be32(0))
        return box("moov", box("mvhd", full(0) + [UInt8](repeating: 0, count: 96))
            + trak(id: 2, handler: "soun", timescale: 48000, entry: "mp4a")
            + trak(id: 1, handler: "vide", timescale: 90000, entry: fourCC)
            + box("mvex", trex))
    }

    /// A fragment of `durations` video samples (each its own duration), plus audio samples in track 2.
    static func fragment(video durations: [UInt32]?, count: Int = 0, audio: Int = 4) -> [UInt8] {
        let videoRun: [UInt8] = if let durations {
            box("trun", full(0x101) + be32(UInt32(durations.count)) + be32(0) + durations.flatMap(be32))
        } else {
            box("trun", full(0x001) + be32(UInt32(count)) + be32(0))
        }
        let video = box("traf", box("tfhd", full(0x020000) + be32(1)) + videoRun)
        let sound = box("traf", box("tfhd", full(0x020008) + be32(2) + be32(1024)) + box("trun", full(0x001) + be32(UInt32(audio)) + be32(0)))
        return box("moof", box("mfhd", full(0) + be32(1)) + video + sound)
    }

    @Test func wholeFragmentsAreCountedFromTheirSampleDurations() throws {
        let movie = Self.box("ftyp", Array("isom".utf8) + Self.be32(0)) + Self.moov()
            + Self.fragment(video: [3000, 3000, 6000]) + Self.box("mdat", [UInt8](repeating: 7, count: 100))
            + Self.fragment(video: nil, count: 30) + Self.box("mdat", [UInt8](repeating: 7, count: 50))
        let facts = try #require(FragmentedMovieFacts(bytes: movie))
        #expect(facts.videoFrames == 33)
        #expect(abs(facts.videoDuration - (12000.0 + 30 * 3000) / 90000) < 1e-9, "\(facts.videoDuration)")
        #expect(facts.videoCodec == "h264")
    }

    /// A crash mid-fragment leaves a moof whose media data is cut off: it plays no frame, so it counts none.
    @Test func aFragmentCutOffByACrashIsNotCounted() throws {
        let whole = Self.moov(fourCC: "hvc1") + Self.fragment(video: nil, count: 30) + Self.box("mdat", [UInt8](repeating: 1, count: 64))
        let cut = Array((Self.fragment(video: nil, count: 30) + Self.box("mdat", [UInt8](repeating: 1, count: 64))).dropLast(10))
        let facts = try #require(FragmentedMovieFacts(bytes: whole + cut))
        #expect(facts.videoFrames == 30)
        #expect(abs(facts.videoDuration - 1) < 1e-9)
        #expect(facts.videoCodec == "hevc")
    }

    @Test func aFileWithoutAVideoTrackOrWithGarbageHasNoFacts() {
        #expect(FragmentedMovieFacts(bytes: []) == nil)
        #expect(FragmentedMovieFacts(bytes: Array("not a movie at all".utf8)) == nil)
        #expect(FragmentedMovieFacts(bytes: Self.box("mdat", [1, 2, 3])) == nil)
    }

    /// The file reader reads box headers and the small boxes only, and agrees with the in-memory one.
    @Test func aFileOnDiskGivesTheSameFacts() throws {
        let movie = Self.moov(fourCC: "av01") + Self.fragment(video: [1500, 1500]) + Self.box("mdat", [UInt8](repeating: 0, count: 4096))
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("facts-\(UUID().uuidString).mp4")
        try Data(movie).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let facts = try #require(FragmentedMovieFacts(contentsOf: url))
        #expect(facts == FragmentedMovieFacts(bytes: movie))
        #expect(facts.videoFrames == 2 && facts.videoCodec == "av1")
    }
}
