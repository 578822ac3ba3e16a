import Foundation
import ReplayCodec
@_spi(OpenReplayKitInternal) import ReplayMedia
import ReplayTesting
import Testing

/// A clip buffer given a spill file: its packets' bytes go to disk a keyframe group at a time,
/// memory holds only the group being encoded, the disk only what the ring keeps, and a save
/// reads them back into the same clip an in-memory buffer saves.
@Suite struct ClipBufferSpillTests {
    /// 320x240 at 30 fps with a tone: noisy pictures, so every packet has bytes.
    static let format = MovieFormat(width: 320, height: 240, picture: .bt601VideoRange, fps: 30, audioSources: [.app])

    static func feed(_ buffer: ClipBuffer, seconds: Int, check: (Int) throws -> Void = { _ in }) throws {
        var seed: UInt32 = 1
        let pixels = PixelBuffer(width: 320, height: 240, format: .bt601VideoRange)
        for index in 0..<(seconds * 30) {
            for offset in 0..<(320 * 240) {
                seed = seed &* 1_664_525 &+ 1_013_904_223
                pixels.mutableBytes[offset] = UInt8(truncatingIfNeeded: seed >> 24)
            }
            for chroma in pixels.offset(ofPlane: 1)..<pixels.bytes.count { pixels.mutableBytes[chroma] = 128 }
            try buffer.append(VideoSample(time: .zero, pixels: pixels), at: MediaTime(seconds: Double(index) / 30))
            if index % 30 == 29 {
                let tone = (0..<48_000).flatMap { sample -> [Float] in
                    let value = Float(sin(Double(sample) * 2 * .pi * 440 / 48_000) * 0.3)
                    return [value, value]
                }
                try buffer.append(audio: tone, source: .app)
                try check(index / 30 + 1)
            }
        }
    }

    /// Disk blocks the file really holds (a punched range holds none).
    static func allocatedBytes(_ path: String) -> Int64 {
        var facts = stat()
        return stat(path, &facts) == 0 ? Int64(facts.st_blocks) * 512 : -1
    }

    @Test func aSpillingBufferHoldsAboutOneGroupInMemoryAndOnlyWhatItKeepsOnDisk() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("spill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // A path of its own: the buffer creates the file and unlinks it at once.
        let spillPath = folder.appendingPathComponent("spill").path
        let buffer = try ClipBuffer(format: Self.format, length: MediaTime(seconds: 5), byteBudget: 1 << 30, spillPath: spillPath)
        #expect(!FileManager.default.fileExists(atPath: spillPath), "the spill file keeps no name")

        var largestInMemory = 0
        try Self.feed(buffer, seconds: 12) { _ in largestInMemory = max(largestInMemory, buffer.bytesInMemory) }
        let kept = buffer.bytesWritten
        #expect(buffer.bufferedDuration >= MediaTime(seconds: 5) && buffer.bufferedDuration < MediaTime(seconds: 7))
        // Memory: the group being encoded (a second) and no more, while 5-6 s are kept.
        #expect(largestInMemory > 0)
        #expect(largestInMemory < Int(kept) / 3, "\(largestInMemory) bytes in memory of \(kept) kept")

        let clip = folder.appendingPathComponent("clip.mp4")
        let saved = try buffer.save(last: nil, to: clip.path)
        #expect(saved.startsOnKeyframe && saved.videoFrames >= 150)
        let probe = try MediaProbe(clip)
        #expect(abs((probe.video?.duration ?? 0) - saved.duration.seconds) < 0.1, "\(probe)")
        let decoded = try Command.run(Command.which("ffmpeg"), ["-v", "error", "-i", clip.path, "-f", "null", "-"])
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
        // The same clip as the same packets kept in memory would give: its video packets' bytes.
        let memory = try ClipBuffer(format: Self.format, length: MediaTime(seconds: 5), byteBudget: 1 << 30)
        try Self.feed(memory, seconds: 12)
        let memoryClip = folder.appendingPathComponent("memory.mp4")
        _ = try memory.save(last: nil, to: memoryClip.path)
        #expect(try Self.packetHashes(clip) == Self.packetHashes(memoryClip))
    }

    @Test func theDiskHoldsWhatTheRingKeepsNotAllThatWasWritten() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("spill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // A name of our own for the file: the descriptor's, as replayd hands it to a capture process.
        let spillPath = folder.appendingPathComponent("spill").path
        let fd = open(spillPath, O_RDWR | O_CREAT | O_EXCL, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        let buffer = try ClipBuffer(format: Self.format, length: MediaTime(seconds: 3), byteBudget: 1 << 30,
                                    spillPath: "/proc/self/fd/\(fd)")
        try Self.feed(buffer, seconds: 15)
        let size = Int64(lseek(fd, 0, SEEK_END))
        let allocated = Self.allocatedBytes(spillPath)
        // 15 s went through the file; the disk holds about the 3-4 s the ring keeps.
        #expect(size > 3 * buffer.bytesWritten, "file size \(size), kept \(buffer.bytesWritten)")
        #expect(allocated < size / 2, "\(allocated) bytes allocated of \(size) written")
        #expect(allocated <= buffer.bytesWritten + 2 * 65_536, "\(allocated) bytes allocated, \(buffer.bytesWritten) kept")
        // And it still saves.
        let clip = folder.appendingPathComponent("clip.mp4")
        let saved = try buffer.save(last: MediaTime(seconds: 2), to: clip.path)
        #expect(saved.startsOnKeyframe && saved.duration >= MediaTime(seconds: 2))
    }

    /// The video packets' bytes, as ffprobe hashes them.
    static func packetHashes(_ file: URL) throws -> [String] {
        let result = try Command.run(Command.which("ffprobe"), [
            "-v", "error", "-select_streams", "v:0", "-show_data_hash", "sha256", "-show_entries", "packet=data_hash",
            "-of", "csv=p=0", file.path,
        ])
        return result.stdout.split(separator: "\n").map(String.init)
    }
}
