import Foundation
import ReplayCodec
@_spi(OpenReplayKitInternal) import ReplayMedia
import ReplayTesting
import Testing

@Suite struct MovieWriterTests {
    func frame(_ index: Int, width: Int = 320, height: Int = 240, format: PictureFormat = .bt601VideoRange) -> PixelBuffer {
        let pixels = PixelBuffer(width: width, height: height, format: format)
        for y in 0..<height { for x in 0..<width { pixels.mutableBytes[y * width + x] = UInt8((x + y + index * 4) & 0xff) } }
        for chroma in pixels.offset(ofPlane: 1)..<pixels.bytes.count { pixels.mutableBytes[chroma] = 128 }
        return pixels
    }

    @Test func writesAFragmentedMP4ThatFFprobeReads() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("writer-\(UUID().uuidString).mp4")
        defer { try? FileManager.default.removeItem(at: path) }
        let writer = try MovieWriter(path: path.path, format: MovieFormat(width: 320, height: 240, picture: .bt601VideoRange, fps: 30,
                                                                          audioSources: [.app, .microphone]))
        for index in 0..<90 {
            try writer.append(VideoSample(time: .zero, pixels: frame(index)), at: MediaTime(seconds: Double(index) / 30))
        }
        let tone = (0..<48_000 * 3).flatMap { index -> [Float] in
            let value = Float(sin(Double(index) * 2 * .pi * 440 / 48_000) * 0.3)
            return [value, value]
        }
        try writer.append(audio: tone, source: .app)
        try writer.append(audio: [Float](repeating: 0, count: 48_000 * 3 * 2), source: .microphone)
        try writer.finish()

        let probe = try MediaProbe(path)
        #expect(probe.video?.codec == "h264" && probe.video?.width == 320 && probe.video?.height == 240)
        #expect(probe.video?.packets == 90)
        #expect(probe.audio.count == 2)
        #expect(probe.audio.map(\.title) == ["app audio", "microphone"])
        #expect(abs((probe.duration ?? 0) - 3) < 0.1)
        // Fragmented: a moof for (at least) every second.
        let bytes = try Data(contentsOf: path)
        let moof = Data("moof".utf8)
        var count = 0
        var range = bytes.startIndex..<bytes.endIndex
        while let found = bytes.range(of: moof, in: range) {
            count += 1
            range = found.upperBound..<bytes.endIndex
        }
        #expect(count >= 3)
    }

    /// A constant-rate movie with sound starts both tracks at zero: every picture on the 1/30 s
    /// grid, the first included (the AAC encoder's priming once made the muxer move the video
    /// 21 ms later, the first frame 1.64 frames long), and a sound heard when it was given.
    @Test func aConstantRateMovieWithSoundHasEveryFrameOnTheGridAndKeepsSync() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("writer-cfr-\(UUID().uuidString).mp4")
        defer { try? FileManager.default.removeItem(at: path) }
        let writer = try MovieWriter(path: path.path, format: MovieFormat(width: 320, height: 240, picture: .bt601VideoRange, fps: 30,
                                                                          audioSources: [.app], frameRateMode: .cfr))
        for index in 0..<60 {
            try writer.append(VideoSample(time: .zero, pixels: frame(index)), at: .samples(Int64(index), rate: 30))
        }
        // Silence, and a tone from exactly 1 s on; given in the capture's 480-frame periods.
        let tone = (0..<48_000 * 2).flatMap { index -> [Float] in
            let value = index < 48_000 ? 0 : Float(sin(Double(index) * 2 * .pi * 440 / 48_000) * 0.5)
            return [value, value]
        }
        for start in stride(from: 0, to: tone.count, by: 960) { try writer.append(audio: Array(tone[start..<start + 960]), source: .app) }
        try writer.finish()

        let frames = try Command.run(Command.which("ffprobe"), [
            "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path.path,
        ]).stdout.split(separator: "\n").compactMap { Double($0) }
        #expect(frames.count == 60)
        let offGrid = frames.enumerated().filter { abs($0.element - Double($0.offset) / 30) > 0.0005 }
        #expect(offGrid.isEmpty, "frames off the grid (index, seconds): \(offGrid.prefix(5).map { ($0.offset, $0.element) })")
        // Decoded as a player does: the tone starts within a millisecond of 1 s.
        let raw = path.appendingPathExtension("f32")
        defer { try? FileManager.default.removeItem(at: raw) }
        let decoded = try Command.run(Command.which("ffmpeg"), [
            "-v", "error", "-i", path.path, "-map", "0:a:0", "-ac", "1", "-f", "f32le", "-y", raw.path,
        ])
        #expect(decoded.status == 0, "\(decoded)")
        let sound = try Data(contentsOf: raw).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let onset = try #require(sound.firstIndex { abs($0) > 0.25 }, "no tone in \(sound.count) samples")
        #expect(abs(onset - 48_000) <= 48, "the tone starts at sample \(onset), not 48000")
    }

    /// The H.264 stream says how its colours were coded, so players convert them back right:
    /// the matrix and range of the pictures, sRGB's primaries and transfer.
    @Test(arguments: [(PictureFormat.bt601VideoRange, "smpte170m", "tv"),
                      (PictureFormat(matrix: .bt709, range: .full), "bt709", "pc")])
    func theVideoTrackIsTaggedWithThePicturesFormat(format: PictureFormat, space: String, range: String) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("writer-\(UUID().uuidString).mp4")
        defer { try? FileManager.default.removeItem(at: path) }
        let writer = try MovieWriter(path: path.path, format: MovieFormat(width: 64, height: 64, picture: format, fps: 30, audioSources: []))
        for index in 0..<3 {
            try writer.append(VideoSample(time: .zero, pixels: frame(index, width: 64, height: 64, format: format)),
                              at: MediaTime(seconds: Double(index) / 30))
        }
        try writer.finish()
        let video = try #require(try MediaProbe(path).video)
        #expect(video.colorSpace == space && video.colorRange == range, "\(video)")
        #expect(video.colorPrimaries == "bt709" && video.colorTransfer == "iec61966-2-1", "\(video)")
    }

    @Test func aPictureOfAnotherFormatThanTheStreamIsRefused() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("writer-\(UUID().uuidString).mp4")
        defer { try? FileManager.default.removeItem(at: path) }
        let writer = try MovieWriter(path: path.path, format: MovieFormat(width: 64, height: 64, picture: .bt601VideoRange, fps: 30,
                                                                          audioSources: []))
        let mislabelled = frame(0, width: 64, height: 64, format: .bt709VideoRange)
        #expect(throws: CodecError.self) { try writer.append(VideoSample(time: .zero, pixels: mislabelled), at: .zero) }
    }

    @Test func aDeviceWithNoSpaceIsAWriteFailure() {
        do {
            let format = MovieFormat(width: 64, height: 64, picture: .bt601VideoRange, fps: 30, audioSources: [])
            let writer = try MovieWriter(path: "/dev/full", format: format)
            for index in 0..<120 {
                try writer.append(VideoSample(time: .zero, pixels: frame(index, width: 64, height: 64)),
                                  at: MediaTime(seconds: Double(index) / 30))
            }
            try writer.finish()
            Issue.record("writing a movie to /dev/full succeeded")
        } catch let error as CodecError {
            #expect(error.code == .writeFailed)
            #expect(error.message.contains("No space left on device"), "\(error)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func aMissingDirectoryIsAClearError() {
        #expect {
            let format = MovieFormat(width: 64, height: 64, picture: .bt601VideoRange, fps: 30, audioSources: [])
            _ = try MovieWriter(path: "/nonexistent/dir/movie.mp4", format: format)
        } throws: { error in
            (error as? CodecError)?.code == .writeFailed && "\(error)".contains("No such file or directory")
        }
    }
}

/// The three codecs and the quality steps, through Debian's FFmpeg.
@Suite struct VideoCodecTests {
    let pictures = MovieWriterTests()

    func write(_ codec: VideoCodec, quality: VideoQuality?, frames: Int = 30) throws -> (URL, MediaProbe) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("codec-\(UUID().uuidString).mp4")
        let writer = try MovieWriter(path: path.path, format: MovieFormat(
            width: 320, height: 240, picture: .bt601VideoRange, fps: 30, codec: codec, quality: quality, audioSources: []))
        for index in 0..<frames {
            try writer.append(VideoSample(time: .zero, pixels: pictures.frame(index)), at: MediaTime(seconds: Double(index) / 30))
        }
        try writer.finish()
        return (path, try MediaProbe(path))
    }

    @Test(arguments: [(VideoCodec.h264, "h264"), (.hevc, "hevc"), (.av1, "av1")])
    func eachCodecWritesAStreamFFprobeReads(codec: VideoCodec, name: String) throws {
        let (path, probe) = try write(codec, quality: .medium)
        defer { try? FileManager.default.removeItem(at: path) }
        #expect(probe.video?.codec == name)
        #expect(probe.video?.packets == 30)
        #expect(probe.video?.colorSpace == "smpte170m", "\(String(describing: probe.video))")
    }

    /// Higher quality costs more bytes, for every codec.
    @Test(arguments: VideoCodec.allCases)
    func aHigherQualityMakesALargerFile(codec: VideoCodec) throws {
        var sizes: [Int] = []
        for quality in [VideoQuality.low, .medium, .high] {
            let (path, _) = try write(codec, quality: quality)
            sizes.append((try FileManager.default.attributesOfItem(atPath: path.path)[.size] as? Int) ?? 0)
            try? FileManager.default.removeItem(at: path)
        }
        #expect(sizes[0] < sizes[1] && sizes[1] < sizes[2], "\(codec): low, medium, high = \(sizes) bytes")
    }

    /// Lossless gives back every pixel as it went in.
    @Test(arguments: [VideoCodec.h264, .hevc])
    func losslessDecodesToTheSamePixels(codec: VideoCodec) throws {
        let (path, _) = try write(codec, quality: .lossless, frames: 3)
        let raw = path.appendingPathExtension("yuv")
        defer { [path, raw].forEach { try? FileManager.default.removeItem(at: $0) } }
        let result = try Command.run(Command.which("ffmpeg"), [
            "-v", "error", "-i", path.path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-y", raw.path,
        ])
        #expect(result.status == 0, "\(result)")
        let decoded = try Data(contentsOf: raw)
        let original = pictures.frame(0)
        #expect(decoded.count == original.bytes.count)
        #expect(decoded.elementsEqual(original.bytes), "\(codec) lossless is not bit-exact")
    }

    @Test func av1HasNoLosslessModeAndSaysSo() {
        #expect {
            _ = try write(.av1, quality: .lossless, frames: 1)
        } throws: { error in
            (error as? CodecError)?.message.contains("no lossless mode") == true
        }
    }
}
