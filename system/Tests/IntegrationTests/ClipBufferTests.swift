import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// Clip buffering on the flash-and-beep demo scene: the last seconds kept in replayd's
    /// memory and saved into the store on request, by the CLI or a hotkey.
    @Suite struct ClipBuffer {
        static func json(_ result: CommandResult) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result)")
        }

        /// The first picture's type, and whether any picture time comes twice, as ffprobe reads them.
        static func frames(_ movie: URL) throws -> (firstIsKeyframe: Bool, times: [Double]) {
            let result = try Command.run(Command.which("ffprobe"), [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0", movie.path,
            ])
            let rows = result.stdout.split(separator: "\n").map { $0.split(separator: ",") }
            let times = rows.compactMap { $0.first.flatMap { Double($0) } }
            return (rows.first.map { $0.count > 1 && $0[1].hasPrefix("K") } ?? false, times)
        }

        @Test func aSavedThirtySecondClipLastsThirtySecondsStartsOnAKeyframeAndKeepsLipSync() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon()
            let started = try fixture.replay(["clip", "start", "--length", "30", "--json"])
            #expect(started.status == 0, "\(started)\n\(fixture.daemonLog.suffix(2000))")
            let status = try Self.json(started)
            #expect(status["length"] as? Double == 30 && status["width"] as? Int == 1920, "\(status)")

            // Right after the start: shorter than asked, and it says so.
            Thread.sleep(forTimeInterval: 3)
            let early = try fixture.replay(["clip", "save", "--last", "30"])
            #expect(early.status == 0 && early.stderr.contains("were kept so far, not the 30 s asked"), "\(early)")

            Thread.sleep(forTimeInterval: 31)
            let clip = fixture.file("clip.mp4")
            let saved = try fixture.replay(["clip", "save", "--last", "30", "--to", clip.path, "--json"])
            #expect(saved.status == 0, "\(saved)")
            let info = try Self.json(saved)
            // Twice in a row: a second recording, as good as the first.
            let again = try fixture.replay(["clip", "save", "--last", "10", "--json"])
            #expect(again.status == 0, "\(again)")
            #expect(try Self.json(again)["id"] as? String != info["id"] as? String)

            let probe = try MediaProbe(clip)
            let duration = try #require(probe.duration)
            // It starts on the keyframe at or before 30 s back: up to a keyframe's spacing more
            // (a second and up to a frame), and the sound may end a packet after the picture.
            #expect(duration >= 29.5 && duration <= 31.1, "a 30 s clip lasts \(duration) s")
            #expect(probe.video?.codec == "h264" && probe.audio.map(\.codec) == ["aac"])
            let (firstIsKeyframe, times) = try Self.frames(clip)
            #expect(firstIsKeyframe, "the clip does not start on a keyframe")
            #expect(Set(times).count == times.count, "a picture time comes twice")
            #expect(times.first.map { $0 < 0.05 } == true, "the clip starts at \(times.first ?? -1) s")
            let sync = try LipSync(clip)
            print("clip of 30 s: \(duration) s, lip sync (ms):", sync.offsets.map { ($0 * 10).rounded() / 10 })
            #expect(sync.offsets.count >= 25, "flashes \(sync.flashes), beeps \(sync.beeps)")
            #expect(sync.maxAbsoluteOffset <= LipSync.limit(frames: 1), "offsets \(sync.offsets)")

            // While paused: what was kept before the pause is saved.
            let clipID = try #require(status["id"] as? String)
            let paused = try fixture.replay(["pause", clipID])
            #expect(paused.status == 0, "\(paused)")
            let whilePaused = try fixture.replay(["clip", "save", "--last", "5", "--json"])
            #expect(whilePaused.status == 0, "\(whilePaused)")
            #expect(try (Self.json(whilePaused)["duration"] as? Double).map { $0 >= 4.5 } == true)
            let pausedStatus = try Self.json(try fixture.replay(["clip", "status", "--json"]))
            #expect(pausedStatus["paused"] as? Bool == true)

            let stopped = try fixture.replay(["clip", "stop"])
            #expect(stopped.status == 0, "\(stopped)")
            #expect(try fixture.replay(["clip", "status"]).stdout.contains("off"))
            // Four saves, four recordings; the buffer itself left nothing in the store.
            #expect(fixture.storedMovies().count == 4)
            let refused = try fixture.replay(["clip", "save"])
            #expect(refused.status != 0 && refused.stderr.contains("not on"), "\(refused)")
        }

        /// The byte budget bounds memory whatever the length: a 10-minute buffer in 1 MB keeps
        /// what fits, saves it whole, and holds no more than the budget.
        @Test func aTenMinuteBufferStaysWithinItsByteBudget() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon()
            let started = try fixture.replay(["clip", "start", "--length", "600", "--budget", "1", "--no-app-audio"])
            #expect(started.status == 0, "\(started)")
            var samples: [(buffered: Double, bytes: Int64)] = []
            for _ in 0..<12 {
                Thread.sleep(forTimeInterval: 1.5)
                let status = try Self.json(try fixture.replay(["clip", "status", "--json"]))
                samples.append((status["buffered"] as? Double ?? -1, Int64(status["bytes"] as? Int ?? -1)))
            }
            print("10-minute buffer, 1 MB budget (s, bytes):", samples.map { "(\(($0.buffered * 10).rounded() / 10), \($0.bytes))" })
            #expect(samples.allSatisfy { $0.bytes <= 1 << 20 }, "over budget")
            // The demo scene costs about 1 MB in 13 s: after 18 s the budget, not the length,
            // bounds what is kept.
            #expect(samples.last.map { $0.buffered < 16 && $0.bytes > (1 << 20) / 2 } == true)
            let clip = fixture.file("budget.mp4")
            let saved = try fixture.replay(["clip", "save", "--to", clip.path, "--json"])
            #expect(saved.status == 0, "\(saved)")
            let duration = try #require(try MediaProbe(clip).duration)
            #expect(abs(duration - (samples.last?.buffered ?? 0)) < 3, "saved \(duration) s of \(samples.last?.buffered ?? 0) s")
            #expect(try Self.frames(clip).firstIsKeyframe)
        }

        /// A half-hour buffer is kept on disk: its bytes in a file with no name in the store,
        /// which the capture process holds and nobody else can open; the store lists nothing
        /// more, and a save reads the seconds back as they were (keyframe first, in sync).
        @Test func aHalfHourBufferKeepsItsBytesInAFileWithNoNameAndSavesThem() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon()
            let started = try fixture.replay(["clip", "start", "--length", "1800", "--json"])
            #expect(started.status == 0, "\(started)\n\(fixture.daemonLog.suffix(2000))")
            let status = try Self.json(started)
            #expect(status["onDisk"] as? Bool == true && status["length"] as? Double == 1800, "\(status)")
            #expect(status["byteBudget"] as? Int == 4 << 30, "\(status)")

            Thread.sleep(forTimeInterval: 12)
            let daemon = try #require(fixture.daemon?.pid)
            let capture = try #require(IntegrationTests.CaptureProcesses.captureProcesses(of: daemon).keys.first)
            // Its one file in the store (the descriptor handed over, and the buffer's copy of
            // it): unlinked (O_TMPFILE), so the store lists none.
            let inStore = IntegrationTests.CaptureProcesses.openFiles(of: capture).filter { $0.hasPrefix(fixture.store.path) }
            #expect(Set(inStore).count == 1 && inStore.allSatisfy { $0.hasSuffix("(deleted)") }, "\(inStore)")
            let listed = try FileManager.default.contentsOfDirectory(atPath: fixture.store.path)
            #expect(listed.isEmpty, "the store lists \(listed)")
            let now = try Self.json(try fixture.replay(["clip", "status", "--json"]))
            let bytes = try #require(now["bytes"] as? Int)
            #expect(bytes > 0 && (now["buffered"] as? Double ?? 0) >= 8, "\(now)")

            let clip = fixture.file("half-hour.mp4")
            let saved = try fixture.replay(["clip", "save", "--last", "8", "--to", clip.path, "--json"])
            #expect(saved.status == 0, "\(saved)")
            let duration = try #require(try MediaProbe(clip).duration)
            #expect(duration >= 7.5 && duration <= 9.1, "an 8 s clip lasts \(duration) s")
            #expect(try Self.frames(clip).firstIsKeyframe)
            let decoded = try Command.run(Command.which("ffmpeg"), ["-v", "error", "-i", clip.path, "-f", "null", "-"])
            #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
            let sync = try LipSync(clip)
            #expect(sync.offsets.count >= 6, "flashes \(sync.flashes), beeps \(sync.beeps)")
            #expect(sync.maxAbsoluteOffset <= LipSync.limit(frames: 1), "offsets \(sync.offsets)")

            #expect(try fixture.replay(["clip", "stop"]).status == 0)
            #expect(fixture.storedMovies().count == 1)
        }

        @Test func aHotkeyOnTheXScreenSavesAClip() throws {
            let fixture = try ReplayFixture(desktop: .init(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let started = try fixture.replay(["clip", "start", "--length", "10", "--hotkey", "Ctrl+Alt+S"])
            #expect(started.status == 0 && started.stdout.contains("press Ctrl+Alt+S"), "\(started)\n\(fixture.daemonLog.suffix(2000))")
            Thread.sleep(forTimeInterval: 3)
            #expect(fixture.storedMovies().isEmpty)
            let pressed = try fixture.run(Command.which("xdotool"), ["key", "ctrl+alt+s"])
            #expect(pressed.status == 0, "\(pressed)")
            let deadline = Date().addingTimeInterval(10)
            while fixture.storedMovies().isEmpty && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
            let movies = fixture.storedMovies()
            #expect(movies.count == 1, "\(fixture.daemonLog.suffix(2000))")
            if let movie = movies.first {
                #expect(try (MediaProbe(movie).duration ?? 0) >= 2)
            }
            // The grab ends with the buffer: the key reaches windows again, and saves nothing.
            #expect(try fixture.replay(["clip", "stop"]).status == 0)
            _ = try fixture.run(Command.which("xdotool"), ["key", "ctrl+alt+s"])
            Thread.sleep(forTimeInterval: 1)
            #expect(fixture.storedMovies().count == 1)
            let unknown = try fixture.replay(["clip", "start", "--hotkey", "Ctrl+Hyper+Q"])
            #expect(unknown.status != 0 && unknown.stderr.contains("unknown hotkey"), "\(unknown)")
            #expect(try fixture.replay(["clip", "status"]).stdout.contains("off"))
        }

        /// An app's clip buffer holds its own windows only, and the app is given the clip
        /// (ReplayKit's exportClip); the store keeps nothing of it.
        @Test func anAppExportsAClipOfItsOwnWindowOnly() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon(Privacy.allowExampleApp(in: fixture))
            let other = try fixture.startApp(["--colour", "green", "--geometry", "700,100,400,300", "--no-protect", "--stay", "60"])
            defer { other.process.terminate() }
            #expect(other.waitForJSONLine { $0["event"] as? String == "window" } != nil, "\(other.outputSoFar)")
            let clip = fixture.file("app-clip.mp4")
            let app = try fixture.startApp(["--colour", "blue", "--geometry", "100,100,400,300", "--no-protect",
                                            "--clip", "3", "--clip-file", clip.path])
            let result = app.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(2000))")
            #expect(result.jsonLines.contains { $0["event"] as? String == "clipExported" }, "\(result)")
            let frame = try DecodedFrame(clip, at: 1.5, width: 1920, height: 1080)
            let isBlue = { (c: DecodedFrame.RGB) in c.b > 200 && c.r < 60 && c.g < 60 }
            #expect(frame.fraction(x: 110, y: 190, width: 380, height: 200, isBlue) > 0.95)
            // The other app's window, and the demo scene, are black.
            #expect(frame.blackFraction(x: 710, y: 110, width: 380, height: 280) > 0.99)
            #expect(frame.blackFraction(x: 0, y: 600, width: 1920, height: 480) > 0.99)
            #expect(fixture.storedMovies().isEmpty, "the app's clip was kept in the store")
        }
    }
}
