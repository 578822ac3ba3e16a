import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    @Suite struct Faults {
        @Test func killingTheDaemonMidRecordingLeavesAPlayableMovie() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon()
            let recording = try fixture.startReplay(["record", "--duration", "20", "--output", fixture.file("wanted.mp4").path])
            Thread.sleep(forTimeInterval: 10)
            let daemon = try #require(fixture.daemon)
            daemon.signal(SIGKILL)
            daemon.wait()
            let cli = recording.finish(timeout: 10)
            #expect(cli.status != 0, "\(cli)")
            // Said once: the daemon stopped, the take is kept, and how to export it; no export is tried.
            #expect(cli.stderr.components(separatedBy: "replayd stopped while recording").count == 2, "\(cli)")
            #expect(cli.stderr.contains("is kept in the store, interrupted after about"), "\(cli)")
            #expect(cli.stderr.contains("Export it with: replay recordings export rec-"), "\(cli)")
            #expect(!cli.stderr.contains("export failed") && !cli.stderr.contains("closed the connection"), "\(cli)")

            let movie = try #require(fixture.storedMovies().first)
            let probe = try MediaProbe(movie)
            #expect((probe.video?.packets ?? 0) >= 8 * 30 * 95 / 100, "video packets \(probe.video?.packets ?? 0)")
            #expect((probe.video?.duration ?? probe.duration ?? 0) >= 8)
            #expect((probe.audio.first?.duration ?? 0) >= 8, "audio \(probe.audio.first?.duration ?? 0)")

            // A new daemon reports it as interrupted, with the figures of the file itself.
            try fixture.startDaemon()
            let listed = try fixture.replay(["recordings", "list", "--json"])
            #expect(listed.stdout.contains("\"interrupted\""), "\(listed)")
            let entry = try #require((try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])?.first)
            #expect(entry["frames"] as? Int == probe.video?.packets, "listed \(entry["frames"] ?? "?"), the file has \(probe.video?.packets ?? 0)")
            let listedDuration = entry["duration"] as? Double ?? 0
            #expect(abs(listedDuration - (probe.video?.duration ?? 0)) < 0.1, "listed \(listedDuration) s, the file's video \(probe.video?.duration ?? 0) s")
        }

        @Test func sigtermStopsTheDaemonCleanlyAndKeepsTheRecording() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let recording = try fixture.startReplay(["record", "--duration", "30", "--json"])
            Thread.sleep(forTimeInterval: 3)
            let daemon = try #require(fixture.daemon)
            daemon.signal(SIGTERM)
            #expect(daemon.wait(timeout: 15) == 0, "daemon log: \(fixture.daemonLog)")
            let cli = recording.finish(timeout: 10)
            #expect(cli.status == 0, "\(cli)")
            #expect(!FileManager.default.fileExists(atPath: fixture.socket))
            let movie = try #require(fixture.storedMovies().first)
            let duration = try MediaProbe(movie).duration ?? 0
            #expect(duration > 2 && duration < 6, "duration \(duration)")
        }

        @Test func interruptingTheCLIStopsTheRecordingAndKeepsIt() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let recording = try fixture.startReplay(["record", "--json"])
            Thread.sleep(forTimeInterval: 3)
            recording.process.signal(SIGINT)
            let cli = recording.finish(timeout: 15)
            #expect(cli.status == 0, "\(cli)")
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(cli.stdout.utf8)) as? [String: Any])
            let duration = summary["duration"] as? Double ?? 0
            #expect(duration > 2 && duration < 6, "\(cli)")
            #expect(try MediaProbe(try #require(fixture.storedMovies().first)).video?.codec == "h264")
        }

        @Test func unknownOptionsAreRefusedWithAMessage() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            let result = try fixture.replay(["record", "--frobnicate"])
            #expect(result.status != 0)
            #expect(result.stderr.contains("Unknown option '--frobnicate'"), "\(result)")
            let badFPS = try fixture.replay(["record", "--fps", "0"])
            #expect(badFPS.status != 0 && badFPS.stderr.contains("--fps"), "\(badFPS)")
            let existing = fixture.file("taken.mp4")
            #expect(FileManager.default.createFile(atPath: existing.path, contents: Data("mine".utf8)))
            let clobber = try fixture.replay(["record", "--duration", "1", "--output", existing.path])
            #expect(clobber.status != 0 && clobber.stderr.contains("--force"), "\(clobber)")
            #expect(try Data(contentsOf: existing) == Data("mine".utf8))
        }

        @Test func noXServerIsAClearError() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            try fixture.startDaemon(environment: ["DISPLAY": ":231"])
            let result = try fixture.replay(["record", "--duration", "2"], environment: ["DISPLAY": ":231"])
            #expect(result.status != 0)
            #expect(result.stderr.contains("cannot connect to X display :231"), "\(result)")
            #expect(fixture.storedMovies().isEmpty)
            // The daemon is still there for the next client.
            #expect(try fixture.replay(["status"]).status == 0)
        }

        @Test func noAudioServerRecordsVideoOnlyWithAWarning() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, audio: false))
            defer { fixture.stop() }
            try fixture.startDaemon(environment: ["PULSE_SERVER": "unix:\(fixture.file("no-pulse").path)"])
            let movie = fixture.file("silent.mp4")
            let result = try fixture.replay(["record", "--duration", "2", "--output", movie.path])
            #expect(result.status == 0, "\(result)")
            #expect(result.stderr.contains("warning: app audio not recorded: no audio server"), "\(result)")
            let probe = try MediaProbe(movie)
            #expect(probe.video?.codec == "h264")
            #expect(probe.audio.isEmpty)
        }

        @Test func aFullDiskEndsTheRecordingWithAnErrorAndKeepsWhatWasWritten() throws {
            let disk = try SmallDisk(megabytes: 8)
            defer { disk.remove() }
            let fixture = try ReplayFixture(storeDirectory: disk.mountPoint.appendingPathComponent("store"))
            defer { fixture.stop() }
            try fixture.startDaemon()
            // 1.25 MB left: more than the store's floor (1 MiB, or a second at the bit rate), and
            // filled within the take (the demo scene at 1080p comes to about 0.9 Mb/s).
            try disk.fill(leaving: 1_250_000)
            let result = try fixture.replay(["record", "--duration", "30", "--bitrate", "4000", "--json"])
            #expect(result.status != 0, "\(result)")
            #expect(result.stderr.contains("No space left on device"), "\(result)")

            let movie = try #require(fixture.storedMovies().first)
            let probe = try MediaProbe(movie)
            #expect(probe.video?.codec == "h264")
            #expect((probe.video?.packets ?? 0) >= 30, "kept \(probe.video?.packets ?? 0) frames")
            // Every kept frame decodes, without a single decoding error.
            let decode = try Command.run(Command.which("ffprobe"), [
                "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames",
                "-of", "csv=p=0", movie.path,
            ])
            #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode)")
            #expect(Int(decode.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == probe.video?.packets, "\(decode)")

            // The next recording into the full store is refused before it starts, and leaves no empty entry.
            let next = try fixture.replay(["record", "--duration", "5", "--bitrate", "4000"])
            #expect(next.status != 0 && next.stderr.contains("the recording store's disk is full"), "\(next)")
            let listed = try fixture.replay(["recordings", "list", "--json"])
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]], "\(listed)")
            #expect(entries.count == 1 && entries.allSatisfy { ($0["frames"] as? Int ?? 0) > 0 }, "\(listed)")
            #expect(fixture.storedMovies().count == 1)
        }

        @Test func malformedRequestsAreRejectedAndTheDaemonCarriesOn() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            try fixture.startDaemon()

            // A header announcing far more than the request limit.
            let oversized = try UnixSocket.connect(path: fixture.socket)
            let oversizedReply = try RawClient.exchange(oversized, bytes: [0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0])
            #expect(oversizedReply.contains("malformedRequest"), "\(oversizedReply)")

            // Valid framing around something that is not a request.
            let json = Array(#"{"launchMissiles":{}}"#.utf8)
            let unknown = try UnixSocket.connect(path: fixture.socket)
            let unknownReply = try RawClient.exchange(unknown, bytes: FrameCodec.encodeHeader(jsonLength: json.count, bodyLength: 0) + json)
            #expect(unknownReply.contains("malformedRequest"), "\(unknownReply)")

            // Out-of-range options are refused too (after the hello every connection starts with).
            let request = try RawClient.frame(ClientRequest.startRecording(options: RecordingOptions(duration: -5, fps: 10_000)))
            let invalid = try UnixSocket.connect(path: fixture.socket)
            let invalidReply = try RawClient.exchange(invalid, bytes: try RawClient.frame(.hello(protocolVersion: ClientProtocol.version, client: "test")) + request)
            #expect(invalidReply.contains("welcome") && invalidReply.contains("fps must be between"), "\(invalidReply)")

            // A request before the hello, and a hello of another version, are refused.
            let early = try UnixSocket.connect(path: fixture.socket)
            let earlyReply = try RawClient.exchange(early, bytes: try RawClient.frame(.status))
            #expect(earlyReply.contains("malformedRequest") && earlyReply.contains("the first message must be hello"), "\(earlyReply)")
            let future = try UnixSocket.connect(path: fixture.socket)
            let futureReply = try RawClient.exchange(future, bytes: try RawClient.frame(.hello(protocolVersion: 99, client: "test")))
            #expect(futureReply.contains("protocolVersionMismatch") && futureReply.contains("protocol 99")
                && futureReply.contains("protocol \(ClientProtocol.version)"), "\(futureReply)")

            #expect(fixture.daemon?.isRunning == true)
            #expect(try fixture.replay(["status"]).status == 0)
        }

        @Test func randomBytesNeverBringTheDaemonDown() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            try fixture.startDaemon()
            var generator = SystemRandomNumberGenerator()
            for round in 0..<200 {
                var bytes = (0..<Int.random(in: 1...512, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                // Every other round, a plausible header so the JSON decoder gets garbage too.
                if round % 2 == 0 { bytes = FrameCodec.encodeHeader(jsonLength: bytes.count, bodyLength: 0) + bytes }
                let fd = try UnixSocket.connect(path: fixture.socket)
                _ = try RawClient.exchange(fd, bytes: bytes)
            }
            #expect(fixture.daemon?.isRunning == true)
            #expect(try fixture.replay(["status"]).status == 0)
        }
    }
}

extension IntegrationTests.Faults {
    @Test func losingTheXServerEndsTheRecordingAndKeepsWhatWasRecorded() throws {
        let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
        defer { fixture.stop() }
        try fixture.startDaemon()
        let recording = try fixture.startReplay(["record", "--duration", "20", "--json"])
        Thread.sleep(forTimeInterval: 3)
        fixture.desktop?.crash(.display)
        let cli = recording.finish(timeout: 20)
        #expect(cli.status != 0, "\(cli)")
        #expect(cli.stderr.contains("lost the connection to the X server"), "\(cli)")
        let probe = try MediaProbe(try #require(fixture.storedMovies().first))
        #expect((probe.duration ?? 0) > 2 && (probe.duration ?? 0) < 6, "duration \(probe.duration ?? 0)")
        // The daemon outlives the display it was recording.
        #expect(try fixture.replay(["status"]).status == 0)
    }

    @Test func losingTheAudioServerKeepsRecordingTheScreen() throws {
        let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
        defer { fixture.stop() }
        try fixture.startDaemon()
        let movie = fixture.file("audio-lost.mp4")
        let recording = try fixture.startReplay(["record", "--duration", "6", "--output", movie.path])
        Thread.sleep(forTimeInterval: 2)
        fixture.desktop?.crash(.audioServer)
        let cli = recording.finish(timeout: 20)
        #expect(cli.status == 0, "\(cli)")
        let probe = try MediaProbe(movie)
        #expect((probe.video?.packets ?? 0) >= 170, "video packets \(probe.video?.packets ?? 0)")
        // The audio track goes on, silent, to the end.
        #expect(abs((probe.audio.first?.duration ?? 0) - 6) < 0.3, "audio \(probe.audio.first?.duration ?? 0)")
        #expect(fixture.daemonLog.contains("audio capture ended"), "\(fixture.daemonLog)")
    }
}

extension IntegrationTests.Faults {
    @Test func aScreenResizeKeepsTheRecordingGoingLetterBoxed() throws {
        let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 800, height: 600, resizable: true))
        defer { fixture.stop() }
        try fixture.startDaemon()
        let recording = try fixture.startReplay(["record", "--duration", "8", "--json"])
        Thread.sleep(forTimeInterval: 3)
        let display = try #require(fixture.desktop?.display)
        // 16:10 into the movie's 4:3: 800x500 in the middle, 50 rows of black above and below.
        let resize = try Command.run(Command.which("xrandr"), ["-s", "640x400"], environment: ["DISPLAY": display])
        #expect(resize.status == 0, "\(resize)")
        let cli = recording.finish(timeout: 20)
        #expect(cli.status == 0, "\(cli)")
        #expect(!cli.stderr.contains("content resized"), "\(cli)")
        let movie = try #require(fixture.storedMovies().first)
        let probe = try MediaProbe(movie)
        #expect(probe.video?.width == 800 && probe.video?.height == 600, "the movie keeps its size")
        #expect(abs((probe.duration ?? 0) - 8) < 0.5, "duration \(probe.duration ?? 0)")

        let before = try DecodedFrame(movie, at: 1.5, width: 800, height: 600)
        #expect(before.blackFraction(x: 0, y: 0, width: 800, height: 48) < 0.1, "the full screen, no bars yet")
        let after = try DecodedFrame(movie, at: 6, width: 800, height: 600)
        #expect(after.blackFraction(x: 0, y: 0, width: 800, height: 46) > 0.95, "a bar above")
        #expect(after.blackFraction(x: 0, y: 556, width: 800, height: 44) > 0.95, "a bar below")
        #expect(after.blackFraction(x: 0, y: 56, width: 800, height: 488) < 0.1, "the new screen in between")
        #expect(fixture.daemonLog.contains("screen resized"), "\(fixture.daemonLog)")
    }
}
