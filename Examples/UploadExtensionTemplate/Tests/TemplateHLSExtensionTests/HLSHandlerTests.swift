import Foundation
import ReplayExtensionTesting
import ReplayMedia
import Testing
@testable import TemplateHLSExtension

/// The handler, driven offline by `BroadcastHarness` as replayd would drive it: no daemon, no
/// sandbox, synthetic pictures and tones.
@Suite struct HLSHandlerTests {
    /// A fresh folder under /tmp, removed after the test.
    final class Folder {
        let path: String
        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("template-hls-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        var files: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }
    }

    /// `seconds` of a 1920x1080 screen at 30 fps (each picture a little brighter) and app sound
    /// (a 440 Hz tone in 1024-frame periods), interleaved in time as replayd sends them.
    static func broadcast(_ harness: BroadcastHarness, seconds: Double, from start: MediaTime = MediaTime(seconds: 100)) {
        var picture = 0, period = 0
        while true {
            let videoTime = Double(picture) / 30, audioTime = Double(period) * 1024 / 48_000
            guard min(videoTime, audioTime) < seconds else { break }
            if videoTime <= audioTime {
                harness.sendVideo(width: 1920, height: 1080, time: start + MediaTime(seconds: videoTime), luma: UInt8(16 + picture % 200))
                picture += 1
            } else {
                harness.sendAudio(.app, time: start + MediaTime(seconds: audioTime))
                period += 1
            }
        }
    }

    @Test func writesAPlayableHLSStream() throws {
        let folder = try Folder()
        let handler = HLSHandler()
        let harness = BroadcastHarness(handler)
        harness.start(setupInfo: ["dir": folder.path, "segment": "1"])
        Self.broadcast(harness, seconds: 3)
        harness.finish()

        #expect(harness.finishError == nil)
        #expect(harness.broadcastURL == "file://\(folder.path)/stream.m3u8")
        #expect(harness.serviceInfo["size"] == "1280x720")  // 1920x1080 fitted into 1280

        // The playlist is complete (ENDLIST) and names every segment, each of which is there.
        let playlist = try String(contentsOfFile: folder.path + "/stream.m3u8", encoding: .utf8)
        #expect(playlist.hasPrefix("#EXTM3U"))
        #expect(playlist.contains("#EXT-X-ENDLIST"))
        let segments = playlist.split(separator: "\n").filter { $0.hasSuffix(".ts") }.map(String.init)
        #expect(segments.count >= 3, "1 s segments of a 3 s broadcast: \(playlist)")
        for segment in segments {
            let size = try FileManager.default.attributesOfItem(atPath: folder.path + "/" + segment)[.size] as? Int ?? 0
            #expect(size > 0, "\(segment) is empty")
        }
        #expect(!folder.files.contains { $0.hasSuffix(".tmp") || $0.hasPrefix(".template-hls-probe") })

        // What a player sees: H.264 1280x720 and AAC, about 3 s long.
        guard let probe = try Self.ffprobe(folder.path + "/stream.m3u8") else {
            print("ffprobe is not installed: the stream's codecs and duration were not checked")
            return
        }
        let streams = probe["streams"] as? [[String: Any]] ?? []
        let codecs = Set(streams.compactMap { $0["codec_name"] as? String })
        #expect(codecs == ["h264", "aac"], "streams: \(streams)")
        let video = streams.first { $0["codec_name"] as? String == "h264" }
        #expect(video?["width"] as? Int == 1280)
        #expect(video?["height"] as? Int == 720)
        let duration = Double((probe["format"] as? [String: Any])?["duration"] as? String ?? "") ?? 0
        #expect(abs(duration - 3) < 0.3, "duration \(duration) s")
        print("ffprobe: \(streams.map { $0.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ") }), duration \(duration) s")
    }

    @Test func aFolderThatIsNotThereFailsTheStart() throws {
        let folder = try Folder()
        let missing = folder.path + "/missing"
        let harness = BroadcastHarness(HLSHandler())
        harness.start(setupInfo: ["dir": missing])
        #expect(harness.finishError == "\(missing) is not a directory")
    }

    @Test func aFolderItCannotWriteIntoFailsTheStartAndNothingIsWritten() throws {
        let folder = try Folder()
        // Root writes anywhere it has permission bits for; /proc refuses new files to anyone.
        let target: String
        if geteuid() == 0 {
            target = "/proc"
        } else {
            target = folder.path + "/read-only"
            try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o555])
        }
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: target) }
        let handler = HLSHandler()
        let harness = BroadcastHarness(handler)
        harness.start(setupInfo: ["dir": target])
        #expect(harness.finishError == "cannot write into \(target)")
        #expect(handler.failed)

        // As replayd does, the harness delivers nothing more but `broadcastFinished`, and the
        // handler, which stopped, writes nothing either.
        Self.broadcast(harness, seconds: 1)
        harness.finish()
        #expect(harness.serviceInfo.isEmpty)
        #expect(harness.broadcastURL == nil)
        if geteuid() != 0 { #expect(try FileManager.default.contentsOfDirectory(atPath: target).isEmpty) }
    }

    @Test func aFolderThatGoesAwayMidBroadcastEndsItWithAnError() throws {
        let folder = try Folder()
        let harness = BroadcastHarness(HLSHandler())
        harness.start(setupInfo: ["dir": folder.path])
        #expect(harness.finishError == nil)
        try FileManager.default.removeItem(atPath: folder.path)
        Self.broadcast(harness, seconds: 3)
        harness.finish()
        let error = try #require(harness.finishError)
        #expect(error.contains(folder.path), "\(error)")
    }

    @Test(arguments: ["0", "11", "two", "1.5"])
    func aWrongSegmentLengthIsExplained(_ segment: String) throws {
        let folder = try Folder()
        let harness = BroadcastHarness(HLSHandler())
        harness.start(setupInfo: ["dir": folder.path, "segment": segment])
        #expect(harness.finishError == "segment must be a whole number of seconds from 1 to 10, not '\(segment)'")
    }

    /// ffprobe's view of a stream as JSON, or nil when ffprobe is not installed
    /// (OpenReplayKit's scripts/install-deps installs it).
    static func ffprobe(_ path: String) throws -> [String: Any]? {
        guard let tool = ["/usr/bin/ffprobe", "/usr/local/bin/ffprobe"].first(where: FileManager.default.isExecutableFile) else {
            return nil
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = ["-v", "error", "-show_entries", "stream=codec_name,width,height:format=duration", "-of", "json", path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "ffprobe failed on \(path)")
        return try JSONSerialization.jsonObject(with: data) as? [String: Any]
    }
}
