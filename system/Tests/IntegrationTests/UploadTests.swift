import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// The RTMP, SRT and HLS extensions against real servers: nginx with its RTMP module, an
    /// ffmpeg SRT listener, and ffprobe on what they received.
    @Suite struct Upload {
        /// Installs the shipped manifests (from the source tree) with the built executables beside them.
        static func installExtensions(in fixture: ReplayFixture) throws -> [String] {
            let directory = fixture.file("extensions")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/Extensions")
            for (folder, id) in [("RTMP", "rtmp"), ("SRT", "srt"), ("HLS", "hls")] {
                let data = try Data(contentsOf: sources.appendingPathComponent("\(folder)/\(id).json"))
                try ExtensionInstall.install(try JSONDecoder().decode(ExtensionManifest.self, from: data), in: directory)
            }
            return ["--extensions-dir", directory.path]
        }

        /// A stream key in a file of the fixture's, for `--setup key=@FILE` (never on a command line).
        static func secretFile(_ secret: String, in fixture: ReplayFixture) throws -> String {
            let file = fixture.file("secret-\(UUID().uuidString.prefix(8))")
            try Data(secret.utf8).write(to: file)
            return file.path
        }

        static func connection(_ status: [String: Any]?) -> String? {
            (status?["serviceInfo"] as? [String: String])?["connection"]
        }

        @Test func rtmpPublishesH264AndAACThatNginxRecordsInSync() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 1280, height: 720))
            defer { fixture.stop() }
            let server = try RTMPServer(in: fixture.directory)
            defer { server.stop() }
            try fixture.startDaemon(Self.installExtensions(in: fixture))
            let key = try Self.secretFile("demo-key", in: fixture)
            let start = try fixture.replay(["broadcast", "start", "--extension", "rtmp", "--setup", "url=\(server.ingestURL)",
                                            "--setup", "key=@\(key)", "--setup", "watch-url=https://example.invalid/watch/demo"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog)")

            let stream = poll(timeout: 20) { try? server.publishing("demo-key").flatMap { $0.audioCodec == nil ? nil : $0 } }
            #expect(stream?.videoCodec == "H264", "\(String(describing: stream))\n\((try? server.stat()) ?? "no /stat")\n\(fixture.daemonLog)")
            #expect(stream?.audioCodec == "AAC", "\(String(describing: stream))")
            #expect(stream?.width == 1280 && stream?.height == 720, "\(String(describing: stream))")
            let live = try Broadcast.latestStatus(fixture)
            #expect(Self.connection(live) == "live", "\(String(describing: live))")
            #expect(live?["broadcastURL"] as? String == "https://example.invalid/watch/demo")
            Thread.sleep(forTimeInterval: 8)  // several of the demo scene's once-a-second flashes
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            let over = try Broadcast.waitUntilOver(fixture)
            #expect(over?["state"] as? String == "finished", "\(String(describing: over))")

            let recorded = try #require(try FileManager.default.contentsOfDirectory(at: server.recordings, includingPropertiesForKeys: nil)
                .first { $0.lastPathComponent.hasPrefix("demo-key") }, "nginx recorded nothing: \(server.log)")
            let probe = try MediaProbe(recorded)
            #expect(probe.video?.codec == "h264" && probe.audio.first?.codec == "aac", "\(probe)")
            let sync = try LipSync(recorded)
            #expect(sync.offsets.count >= 4, "flashes \(sync.flashes), beeps \(sync.beeps)")
            // Within one frame at 30 fps.
            #expect(sync.maxAbsoluteOffset <= LipSync.limit(frames: 1), "offsets \(sync.offsets) ms")
        }

        @Test func rtmpRidesOutAServerRestartAndTheHostAppSeesReconnecting() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let server = try RTMPServer(in: fixture.directory)
            defer { server.stop() }
            let (app, browser, page) = try Broadcast.openPicker(
                fixture, appArguments: ["--go-live", "rtmp", "--live-seconds", "60"], extensions: Self.installExtensions(in: fixture))
            defer { browser.stop() }
            _ = try page.evaluate("document.getElementById('setup-rtmp-url').value = \(String(reflecting: server.ingestURL))")
            _ = try page.evaluate("document.getElementById('setup-rtmp-key').value = 'restart'")
            try page.click("#start")
            try page.waitUntil("document.getElementById('result') !== null && document.getElementById('result').textContent === 'Live'")
            #expect(poll(timeout: 20) { try? server.publishing("restart") } != nil, "\(server.log)\n\(fixture.daemonLog)")

            server.stop()
            let reconnecting = try Broadcast.waitForStatus(fixture, timeout: 10) { Self.connection($0) == "reconnecting" }
            #expect(Self.connection(reconnecting) == "reconnecting", "the CLI never showed reconnecting: \(String(describing: try? Broadcast.latestStatus(fixture)))")
            Thread.sleep(forTimeInterval: 5)
            // Meanwhile the stream went on being encoded into the bounded backlog (the service
            // info shown may be up to 2 s old).
            let waiting = try Broadcast.latestStatus(fixture)
            let buffered = Double((waiting?["serviceInfo"] as? [String: String])?["buffered-seconds"] ?? "") ?? 0
            #expect(buffered >= 2, "\(String(describing: waiting))")
            try server.start()
            let restarted = Date()
            // The issue's bound: publishing again within 10 s of the server's return.
            let back = poll(timeout: 10) { try? server.publishing("restart") }
            #expect(back != nil, "not publishing 10 s after nginx came back\n\(fixture.daemonLog)")
            let status = try Broadcast.latestStatus(fixture)
            #expect(status?["state"] as? String == "live" && Self.connection(status) == "live", "\(String(describing: status))")
            #expect((status?["serviceInfo"] as? [String: String])?["reconnects"] == "1", "\(String(describing: status))")
            Thread.sleep(forTimeInterval: 3)
            // What was buffered during the outage reached the server too: the second publish
            // holds more than the time since nginx came back.
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            let sinceRestart = Date().timeIntervalSince(restarted)
            let files = try FileManager.default.contentsOfDirectory(at: server.recordings, includingPropertiesForKeys: nil)
                .filter { $0.lastPathComponent.hasPrefix("restart") }.sorted { $0.lastPathComponent < $1.lastPathComponent }
            #expect(files.count == 2, "\(files)")
            if files.count == 2 {
                let resumed = try MediaProbe(files[1])
                #expect((resumed.video?.duration ?? resumed.duration ?? 0) > sinceRestart + 2, "\(resumed), \(sinceRestart) s since the restart")
            }

            let result = app.finish(timeout: 60)
            #expect(result.status == 0, "\(result)")
            let seen = result.jsonLines.filter { $0["event"] as? String == "broadcast" }.compactMap { $0["connection"] as? String }
                .reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
            // The host app saw the stream go live, drop to reconnecting, and come back.
            #expect(seen.drop { $0 != "live" }.starts(with: ["live", "reconnecting", "live"]), "\(seen)")
            let states = result.jsonLines.compactMap { $0["state"] as? String }
            #expect(states.last == "finished" && !states.contains("failed"), "\(states)")
        }

        @Test func anUnreachableServerEndsTheBroadcastWithAClearErrorThatHidesTheKey() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.installExtensions(in: fixture))
            let port = try LoopbackPort.free()  // nothing listens here
            let start = try fixture.replay(["broadcast", "start", "--extension", "rtmp", "--setup", "url=rtmp://127.0.0.1:\(port)/live",
                                            "--setup", "key=@\(try Self.secretFile("very-secret-key", in: fixture))", "--setup", "reconnect-timeout=2"])
            #expect(start.status == 0, "\(start)")
            let over = try Broadcast.waitUntilOver(fixture, timeout: 30)
            #expect(over?["state"] as? String == "failed", "\(String(describing: over))")
            let error = over?["lastError"] as? String ?? ""
            #expect(error.contains("could not connect") && error.contains("rtmp://127.0.0.1:\(port)/live"), "\(error)")
            let everything = error + fixture.daemonLog + (try fixture.replay(["broadcast", "status"]).stdout)
            #expect(!everything.contains("very-secret-key"), "the stream key leaked")

            let bad = try fixture.replay(["broadcast", "start", "--extension", "rtmp", "--setup", "url=http://example.invalid",
                                          "--setup", "key=@\(try Self.secretFile("k", in: fixture))"])
            let failed = try Broadcast.waitUntilOver(fixture)
            #expect(bad.status != 0 || failed?["state"] as? String == "failed")
            #expect((failed?["lastError"] as? String ?? "").contains("url must be an RTMP server address"), "\(String(describing: failed))")
        }

        @Test func srtCallsAListenerThatReceivesH264AndAACInMPEGTS() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let received = fixture.file("received.ts")
            let listener = try SRTListener(output: received)
            try fixture.startDaemon(Self.installExtensions(in: fixture))
            let start = try fixture.replay(["broadcast", "start", "--extension", "srt", "--setup", "url=\(listener.url)"])
            #expect(start.status == 0, "\(start)")
            let live = try Broadcast.waitForStatus(fixture, timeout: 15) { Self.connection($0) == "live" }
            #expect(Self.connection(live) == "live", "\(String(describing: try? Broadcast.latestStatus(fixture)))\n\(fixture.daemonLog)")
            Thread.sleep(forTimeInterval: 5)
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            #expect(try Broadcast.waitUntilOver(fixture)?["state"] as? String == "finished")
            let result = listener.finish()
            let probe = try MediaProbe(received)
            #expect(probe.video?.codec == "h264" && probe.audio.first?.codec == "aac", "\(probe)\n\(result)")
            #expect((probe.video?.packets ?? 0) >= 60, "\(probe)")
        }

        @Test func hlsWritesSegmentsAndAPlaylistThatFFprobeReadsAndAPauseLeavesNoHole() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let output = fixture.file("hls")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            try fixture.startDaemon(Self.installExtensions(in: fixture))
            let start = try fixture.replay(["broadcast", "start", "--extension", "hls", "--setup", "dir=\(output.path)"])
            #expect(start.status == 0, "\(start)")
            Thread.sleep(forTimeInterval: 4)
            // A pause keeps the stream up: the last picture twice a second, and silence.
            #expect(try fixture.replay(["broadcast", "pause"]).status == 0)
            Thread.sleep(forTimeInterval: 3)
            #expect(try fixture.replay(["broadcast", "resume"]).status == 0)
            Thread.sleep(forTimeInterval: 3)
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            let over = try Broadcast.waitUntilOver(fixture)
            #expect(over?["state"] as? String == "finished", "\(String(describing: over))\n\(fixture.daemonLog)")
            let playlist = try String(contentsOf: output.appendingPathComponent("stream.m3u8"), encoding: .utf8)
            #expect(playlist.contains("#EXT-X-ENDLIST"), "\(playlist)")
            let segments = playlist.split(separator: "\n").filter { $0.hasSuffix(".ts") }
            #expect(segments.count >= 3, "\(playlist)")
            let probe = try MediaProbe(output.appendingPathComponent("stream.m3u8"))
            #expect(probe.video?.codec == "h264" && probe.audio.first?.codec == "aac", "\(probe)")
            #expect(probe.video?.width == 640 && probe.video?.height == 480, "\(probe)")
            let playlist2 = output.appendingPathComponent("stream.m3u8").path
            for stream in ["v:0", "a:0"] {
                let times = try Command.run(Command.which("ffprobe"), [
                    "-v", "error", "-select_streams", stream, "-show_entries", "packet=pts_time", "-of", "csv=p=0", playlist2,
                ]).stdout.split(whereSeparator: \.isNewline).compactMap { Double($0.split(separator: ",")[0]) }.sorted()
                let longestGap = zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? .infinity
                #expect(longestGap < 1.0, "\(stream): a \(longestGap) s hole in \(times.count) packets")
                #expect((times.last ?? 0) - (times.first ?? 0) > 9, "\(stream) covers \(times.first ?? 0)...\(times.last ?? 0)")
            }

        }
    }
}
