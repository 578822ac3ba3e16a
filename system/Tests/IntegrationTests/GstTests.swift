import Foundation
import Glibc
import ReplayIPC
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// The gst extension in its sandbox under a real replayd: the person's pipeline tail into a
    /// file and into nginx-rtmp, ffprobe on what arrived, and the tails it must refuse.
    @Suite struct Gst {
        /// Installs the shipped manifest (from the source tree) with the built executable beside it.
        static func installExtension(in fixture: ReplayFixture) throws -> [String] {
            let directory = fixture.file("extensions")
            let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/Extensions/Gst/gst.json")
            try ExtensionInstall.install(try JSONDecoder().decode(ExtensionManifest.self, from: Data(contentsOf: source)), in: directory)
            return ["--extensions-dir", directory.path]
        }

        static func folder(_ name: String, in fixture: ReplayFixture) throws -> URL {
            let folder = fixture.file(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return folder
        }

        /// Waits until the broadcast has sent `frames` pictures to the extension; returns its status.
        static func waitForFrames(_ fixture: ReplayFixture, _ frames: Int) throws -> [String: Any]? {
            try Broadcast.waitForStatus(fixture, timeout: 30) { ($0["framesSent"] as? Int ?? 0) >= frames || $0["state"] as? String != "live" }
        }

        @Test func aTailIntoAnMP4FileGivesH264AndAACAndStaysUnder50MB() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 1280, height: 720))
            defer { fixture.stop() }
            let out = try Self.folder("out", in: fixture)
            try fixture.startDaemon(Self.installExtension(in: fixture))
            let movie = out.appendingPathComponent("live.mp4")
            let tail = "x264enc tune=zerolatency speed-preset=veryfast bitrate=2000 ! h264parse ! mp4mux name=mux ! filesink location=\(movie.path) "
                + "audio. ! voaacenc ! mux."
            let start = try fixture.replay(["broadcast", "start", "--extension", "gst", "--setup", "pipeline=\(tail)", "--setup", "dir=\(out.path)"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog)")
            let live = try #require(try Self.waitForFrames(fixture, 150), "\(fixture.daemonLog)")
            #expect(live["state"] as? String == "live", "\(live)\n\(fixture.daemonLog)")
            #expect((live["serviceInfo"] as? [String: String])?["audio"] == "yes", "\(live)")
            let peak = live["extensionPeakMemory"] as? Int ?? 0
            print("gst extension peak memory, 1280x720 into mp4 with AAC: \(peak / 1024) KiB")
            #expect(peak > 0 && peak < 50 * 1024 * 1024, "extension peak memory \(peak)")
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            let over = try Broadcast.waitUntilOver(fixture)
            #expect(over?["state"] as? String == "finished", "\(String(describing: over))\n\(fixture.daemonLog)")

            // The muxer wrote its index at the end of the stream: ffprobe reads the whole movie.
            let probe = try MediaProbe(movie)
            #expect(probe.video?.codec == "h264" && probe.video?.width == 1280 && probe.video?.height == 720, "\(probe)")
            #expect(probe.audio.first?.codec == "aac", "\(probe)")
            #expect((probe.video?.packets ?? 0) >= 100, "\(probe)")
            #expect((probe.audio.first?.duration ?? 0) >= 3, "\(probe)")
        }

        @Test func rtmp2sinkPublishesH264AndAACThatNginxRecordsAndTheKeyStaysHidden() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let server = try RTMPServer(in: fixture.directory)
            defer { server.stop() }
            try fixture.startDaemon(Self.installExtension(in: fixture))
            let key = try Upload.secretFile("gst-secret-key", in: fixture)
            let tail = "x264enc tune=zerolatency key-int-max=30 ! flvmux name=mux streamable=true ! rtmp2sink location=\(server.ingestURL)/{key} "
                + "audio. ! voaacenc ! aacparse ! mux."
            let start = try fixture.replay(["broadcast", "start", "--extension", "gst", "--setup", "pipeline=\(tail)", "--setup", "key=@\(key)"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog)")

            let stream = poll(timeout: 20) { try? server.publishing("gst-secret-key").flatMap { $0.audioCodec == nil ? nil : $0 } }
            #expect(stream?.videoCodec == "H264" && stream?.audioCodec == "AAC", "\(String(describing: stream))\n\(server.log)\n\(fixture.daemonLog)")
            #expect(stream?.width == 640 && stream?.height == 480, "\(String(describing: stream))")
            let live = try #require(try Self.waitForFrames(fixture, 90))
            #expect(live["state"] as? String == "live", "\(live)")
            let peak = live["extensionPeakMemory"] as? Int ?? 0
            print("gst extension peak memory, 640x480 to RTMP with AAC: \(peak / 1024) KiB")
            #expect(peak > 0 && peak < 50 * 1024 * 1024, "extension peak memory \(peak)")
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            let over = try Broadcast.waitUntilOver(fixture)
            #expect(over?["state"] as? String == "finished", "\(String(describing: over))")

            let recorded = try #require(try FileManager.default.contentsOfDirectory(at: server.recordings, includingPropertiesForKeys: nil)
                .first { $0.lastPathComponent.hasPrefix("gst-secret-key") }, "nginx recorded nothing: \(server.log)")
            let probe = try MediaProbe(recorded)
            #expect(probe.video?.codec == "h264" && probe.audio.first?.codec == "aac", "\(probe)")
            #expect((probe.video?.packets ?? 0) >= 60, "\(probe)")
            let everything = fixture.daemonLog + (try fixture.replay(["broadcast", "status"]).stdout)
            #expect(!everything.contains("gst-secret-key"), "the stream key leaked")
        }

        @Test func srtsinkCallsAListenerThatReceivesH264AndAACInMPEGTS() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let received = fixture.file("received.ts")
            let listener = try SRTListener(output: received)
            try fixture.startDaemon(Self.installExtension(in: fixture))
            let tail = "x264enc tune=zerolatency key-int-max=30 ! h264parse ! mpegtsmux name=mux alignment=7 ! srtsink uri=\(listener.url) "
                + "audio. ! voaacenc ! aacparse ! mux."
            let start = try fixture.replay(["broadcast", "start", "--extension", "gst", "--setup", "pipeline=\(tail)"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog)")
            // ffmpeg writes what it received: a few hundred kB is several seconds of the scene.
            let size = poll(timeout: 30) { () -> Int? in
                let bytes = (try? FileManager.default.attributesOfItem(atPath: received.path)[.size] as? Int) ?? 0
                return bytes > 300_000 ? bytes : nil
            }
            #expect(size != nil, "\(String(describing: try? Broadcast.latestStatus(fixture)))\n\(fixture.daemonLog)")
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            #expect(try Broadcast.waitUntilOver(fixture)?["state"] as? String == "finished")
            let result = listener.finish()
            let probe = try MediaProbe(received)
            #expect(probe.video?.codec == "h264" && probe.audio.first?.codec == "aac", "\(probe)\n\(result)")
            #expect((probe.video?.packets ?? 0) >= 30, "\(probe)")
        }

        @Test func aServerThatGoesAwayEndsTheBroadcastWithAClearError() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            let server = try RTMPServer(in: fixture.directory)
            defer { server.stop() }
            try fixture.startDaemon(Self.installExtension(in: fixture))
            let start = try fixture.replay(["broadcast", "start", "--extension", "gst", "--setup",
                                            "pipeline=x264enc tune=zerolatency ! flvmux streamable=true ! rtmp2sink location=\(server.ingestURL)/gone"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog)")
            #expect(poll(timeout: 20) { try? server.publishing("gone") } != nil, "\(server.log)\n\(fixture.daemonLog)")
            server.stop()
            let over = try Broadcast.waitUntilOver(fixture, timeout: 30)
            #expect(over?["state"] as? String == "failed", "\(String(describing: over))\n\(fixture.daemonLog)")
            let error = over?["lastError"] as? String ?? ""
            #expect(error.contains("the pipeline stopped: ") && error.contains("(rtmp2sink0)"), "\(error)")
        }

        /// rtmp2sink is allowed, and its host and port properties make a location the list
        /// takes; but the setup names no server there by URL, so the sandbox (Landlock) refuses
        /// the connect: the broadcast fails, and the listener never hears of it.
        @Test func aServerNamedOnlyByPropertiesIsOutOfTheSandboxsReach() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            let listener = try LoopbackPort.listen()
            defer { close(listener.fd) }
            try fixture.startDaemon(Self.installExtension(in: fixture))
            let tail = "x264enc tune=zerolatency ! flvmux ! rtmp2sink host=127.0.0.1 port=\(listener.port) application=live stream=s"
            _ = try fixture.replay(["broadcast", "start", "--extension", "gst", "--setup", "pipeline=\(tail)"])
            let over = try Broadcast.waitUntilOver(fixture, timeout: 30)
            #expect(over?["state"] as? String == "failed", "\(String(describing: over))\n\(fixture.daemonLog)")
            // Landlock's answer is EACCES, which GStreamer writes out.
            let error = over?["lastError"] as? String ?? ""
            #expect(error.contains("Permission denied") && error.contains("(rtmp2sink0)"), "\(error)")
            var pending = pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0)
            #expect(Glibc.poll(&pending, 1, 0) == 0, "the extension reached port \(listener.port)")
        }

        @Test func hlssink2WritesAPlaylistAndH264SegmentsIntoTheFolder() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let out = try Self.folder("hls", in: fixture)
            try fixture.startDaemon(Self.installExtension(in: fixture))
            let tail = "x264enc tune=zerolatency key-int-max=15 ! h264parse ! hlssink2 target-duration=1 "
                + "location=\(out.path)/segment%05d.ts playlist-location=\(out.path)/live.m3u8"
            let start = try fixture.replay(["broadcast", "start", "--extension", "gst", "--setup", "pipeline=\(tail)", "--setup", "dir=\(out.path)"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog)")
            let segments = poll(timeout: 30) { () -> [String]? in
                let names = (try? FileManager.default.contentsOfDirectory(atPath: out.path))?.filter { $0.hasSuffix(".ts") } ?? []
                return names.count >= 3 ? names.sorted() : nil
            }
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            #expect(try Broadcast.waitUntilOver(fixture)?["state"] as? String == "finished")
            let names = try #require(segments, "\(fixture.daemonLog)")
            let playlist = try String(contentsOf: out.appendingPathComponent("live.m3u8"), encoding: .utf8)
            #expect(playlist.contains("#EXTM3U") && playlist.contains(names[0]), "\(playlist)")
            let probe = try MediaProbe(out.appendingPathComponent(names[0]))
            #expect(probe.video?.codec == "h264" && probe.video?.width == 640, "\(probe)")
        }

        /// What the extension refuses, before anything plays: the broadcast never starts, the
        /// message names what is wrong, and nothing is written.
        @Test func refusedAndMalformedTailsStartNoBroadcastAndSayWhy() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            let out = try Self.folder("out", in: fixture)
            let elsewhere = try Self.folder("elsewhere", in: fixture)
            try fixture.startDaemon(Self.installExtension(in: fixture))
            let port = try LoopbackPort.listen()
            defer { close(port.fd) }
            let cases: [(tail: String, expected: String)] = [
                // A sink off the list: fdsink on the extension's own connection to replayd.
                ("x264enc ! flvmux ! fdsink fd=3", "'fdsink', which the gst extension does not allow"),
                // One that would reach a server the setup names by no URL.
                ("x264enc ! flvmux ! tcpclientsink host=127.0.0.1 port=\(port.port)", "'tcpclientsink', which the gst extension does not allow"),
                // One that would write outside the folder the person chose.
                ("x264enc ! mp4mux ! filesink location=\(elsewhere.path)/stolen.mp4", "filesink's location is '\(elsewhere.path)/stolen.mp4': it must be a file inside \(out.path)"),
                ("x264enc ! mp4mux ! filesink location=\(out.path)/../elsewhere/dotdot.mp4", "it must be a file inside \(out.path)"),
                // A child's property, to reach inside an allowed element.
                ("x264enc ! hlssink2 splitmuxsink0::location=\(elsewhere.path)/x.ts", "sets a property of an element's child"),
                ("x264enc ! ! filesink location=\(out.path)/a.mp4", "the pipeline is malformed: "),
            ]
            for (tail, expected) in cases {
                let start = try fixture.replay(["broadcast", "start", "--extension", "gst", "--setup", "pipeline=\(tail)", "--setup", "dir=\(out.path)"])
                #expect(start.status != 0, "\(tail) started: \(start)")
                #expect((start.stdout + start.stderr).contains(expected), "\(tail): \(start)")
                let status = try Broadcast.latestStatus(fixture)
                #expect(status?["state"] as? String != "live", "\(tail): \(String(describing: status))")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty)
            // Nothing connected to the listener the refused tcpclientsink named.
            var pending = pollfd(fd: port.fd, events: Int16(POLLIN), revents: 0)
            #expect(Glibc.poll(&pending, 1, 0) == 0, "something connected to port \(port.port)")
        }
    }
}
