import Foundation
import ReplayCodec
@_spi(OpenReplayKitInternal) import ReplayMedia
import ReplayTesting
import Testing

@Suite struct MovieTrimmerTests {
    /// 10 s at 30 fps, a keyframe every 40 pictures (0, 1.33, 2.67, 4.0 … s: 3.0 falls between
    /// two), and a tone on the app audio track.
    static let source: URL = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("trim-source-\(UUID().uuidString).mp4")
        let writer = try! MovieWriter(path: path.path, format: MovieFormat(width: 320, height: 240, picture: .bt601VideoRange, fps: 30,
                                                                           keyframeInterval: 40, audioSources: [.app]))
        for index in 0..<300 {
            let pixels = PixelBuffer(width: 320, height: 240, format: .bt601VideoRange)
            for y in 0..<240 { for x in 0..<320 { pixels.mutableBytes[y * 320 + x] = UInt8((x + y + index * 4) & 0xff) } }
            for chroma in pixels.offset(ofPlane: 1)..<pixels.bytes.count { pixels.mutableBytes[chroma] = 128 }
            try! writer.append(VideoSample(time: .zero, pixels: pixels), at: MediaTime(seconds: Double(index) / 30))
        }
        let tone = (0..<48_000 * 10).flatMap { index -> [Float] in
            let value = Float(sin(Double(index) * 2 * .pi * 440 / 48_000) * 0.3)
            return [value, value]
        }
        try! writer.append(audio: tone, source: .app)
        try! writer.finish()
        return path
    }()

    struct Packet: Equatable {
        let time: Double
        let keyframe: Bool
        let hash: String
    }

    /// Every packet of the first stream of `type`, as ffprobe reads them (a hash of each's bytes).
    func packets(_ file: URL, _ type: String = "v") throws -> [Packet] {
        let result = try Command.run(Command.which("ffprobe"), [
            "-v", "error", "-select_streams", "\(type):0", "-show_data_hash", "sha256", "-show_entries", "packet=pts_time,flags,data_hash",
            "-of", "json", file.path,
        ])
        let root = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let list = root?["packets"] as? [[String: Any]] ?? []
        return list.map { packet in
            Packet(time: Double(packet["pts_time"] as? String ?? "") ?? -1, keyframe: (packet["flags"] as? String ?? "").hasPrefix("K"),
                   hash: packet["data_hash"] as? String ?? "")
        }
    }

    /// What ffmpeg says decoding every stream of `file`: nothing when it decodes cleanly.
    func decodingErrors(_ file: URL) throws -> String {
        let result = try Command.run(Command.which("ffmpeg"), ["-v", "error", "-i", file.path, "-f", "null", "-"])
        return result.status == 0 ? result.stderr : "status \(result.status): \(result.stderr)"
    }

    func output(_ suffix: String = "mp4") -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("trimmed-\(UUID().uuidString).\(suffix)")
    }

    @Test func aSpanBetweenKeyframesIsCopiedFromTheKeyframeAndReencodedOnlyBeforeIt() throws {
        let trimmed = output()
        defer { try? FileManager.default.removeItem(at: trimmed) }
        let report = try MovieTrimmer.trim(Self.source.path, to: trimmed.path, from: 3.0, to: 7.0, container: .mp4)

        let probe = try MediaProbe(trimmed)
        #expect(abs((probe.duration ?? 0) - 4) <= 1.0 / 30 + 0.001, "lasts \(probe.duration ?? 0) s")
        #expect(abs((probe.video?.duration ?? 0) - 4) <= 1.0 / 30 + 0.001)
        let source = try packets(Self.source), ours = try packets(trimmed)
        #expect(ours.first?.keyframe == true && ours.first?.time == 0)
        #expect(ours.count == 120, "\(ours.count) pictures")
        // The source's first keyframe at or after 3 s: copied from there on, byte for byte.
        let splice = try #require(source.first { $0.keyframe && $0.time >= 3.0 - 0.001 })
        let head = source.filter { $0.time >= 3.0 - 0.001 && $0.time < splice.time - 0.001 }.count
        #expect(head > 0 && report.framesReencoded == head && !report.reencodedWhole, "\(report)")
        let sourceHashes = Set(source.map(\.hash))
        let copied = ours.filter { sourceHashes.contains($0.hash) }
        #expect(copied.count == 120 - head && report.videoPacketsCopied == 120 - head)
        #expect(ours.filter { !sourceHashes.contains($0.hash) }.allSatisfy { $0.time < splice.time - 3.0 - 0.001 })
        #expect(copied.count > ours.count / 2)
        // The sound too: 4 s of it, starting at 0.
        let audio = try packets(trimmed, "a")
        #expect(report.audioPacketsCopied == audio.count)
        #expect(abs(Double(audio.count) * 1024 / 48_000 - 4) < 0.05 && (audio.first?.time ?? 1) < 0.03)
        #expect(probe.audio.count == 1 && abs((probe.audio.first?.duration ?? 0) - 4) < 0.05)
        #expect(try decodingErrors(trimmed) == "")
    }

    @Test func aSpanFromAKeyframeReencodesNothing() throws {
        let trimmed = output("mkv")
        defer { try? FileManager.default.removeItem(at: trimmed) }
        // Picture 120 is a keyframe.
        let report = try MovieTrimmer.trim(Self.source.path, to: trimmed.path, from: 4.0, to: 6.0, container: .matroska)
        #expect(report.framesReencoded == 0 && !report.reencodedWhole && report.videoPacketsCopied == 60, "\(report)")
        let sourceHashes = Set(try packets(Self.source).map(\.hash))
        let ours = try packets(trimmed)
        #expect(ours.count == 60 && ours.allSatisfy { sourceHashes.contains($0.hash) })
        #expect(try MediaProbe(trimmed).formatName?.contains("matroska") == true)
        #expect(abs((try MediaProbe(trimmed).duration ?? 0) - 2) <= 1.0 / 30 + 0.001)
        #expect(try decodingErrors(trimmed) == "")
    }

    /// A movie whose tag names other settings (or none) cannot take the head's pictures: the span is encoded again whole.
    @Test(arguments: [
        ["-metadata", "org.openreplaykit.video-encoder=codec=h264 preset=veryslow crf=40 rate=vfr fps=30"],
        ["-map_metadata", "-1"],
    ])
    func aMovieWhoseEncoderCannotBeMatchedIsReencodedWhole(retag: [String]) throws {
        let retagged = output(), trimmed = output()
        defer {
            try? FileManager.default.removeItem(at: retagged)
            try? FileManager.default.removeItem(at: trimmed)
        }
        let copy = try Command.run(Command.which("ffmpeg"), ["-v", "error", "-i", Self.source.path, "-c", "copy"] + retag + [
            "-movflags", "frag_keyframe+empty_moov+default_base_moof+use_metadata_tags", "-y", retagged.path,
        ])
        #expect(copy.status == 0, "\(copy.stderr)")
        let report = try MovieTrimmer.trim(retagged.path, to: trimmed.path, from: 3.0, to: 7.0, container: .mp4)
        #expect(report.reencodedWhole && report.framesReencoded == 120 && report.videoPacketsCopied == 0, "\(report)")
        #expect(report.audioPacketsCopied > 180)
        #expect(abs((try MediaProbe(trimmed).duration ?? 0) - 4) <= 1.0 / 30 + 0.001)
        #expect(try packets(trimmed).first?.keyframe == true)
        #expect(try decodingErrors(trimmed) == "")
    }

    @Test func anEndPastTheMovieMeansItsEnd() throws {
        let trimmed = output()
        defer { try? FileManager.default.removeItem(at: trimmed) }
        let report = try MovieTrimmer.trim(Self.source.path, to: trimmed.path, from: 8.0, to: 60, container: .mp4)
        #expect(abs(report.duration - 2) < 0.05)
        #expect(abs((try MediaProbe(trimmed).duration ?? 0) - 2) <= 1.0 / 30 + 0.03)
    }

    @Test(arguments: [(-1.0, 2.0), (5.0, 5.0), (6.0, 2.0), (12.0, 15.0), (Double.nan, 3.0), (1.0, Double.infinity)])
    func aSpanThatIsNotOneOfTheMovieIsRefusedClearly(from: Double, to: Double) throws {
        let trimmed = output()
        defer { try? FileManager.default.removeItem(at: trimmed) }
        let error = #expect(throws: CodecError.self) {
            try MovieTrimmer.trim(Self.source.path, to: trimmed.path, from: from, to: to, container: .mp4)
        }
        #expect(error?.code == .invalidSpan, "\(String(describing: error))")
        #expect(error?.message.contains("span") == true)
    }

    @Test func theEncoderSettingsTagReadsBackAndRefusesAnotherProgramsText() {
        let settings = VideoEncoderSettings(codec: .hevc, preset: "fast", bitRate: 4_000_000, crf: 23, quality: .high,
                                            keyframeInterval: 60, fixedKeyframes: true, frameRateMode: .cfr, fps: 60)
        #expect(VideoEncoderSettings(tag: settings.tag) == settings)
        #expect(VideoEncoderSettings(tag: "Lavf59.27.100") == nil)
        #expect(VideoEncoderSettings(tag: settings.tag + " tune=film") == nil)
    }
}
