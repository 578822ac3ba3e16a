import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    @Suite struct Recording {
        @Test func demoSceneRecordingIsH264AndAACAtTheDisplaySizeWithEveryFrame() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon()
            let movie = fixture.file("demo.mp4")
            let result = try fixture.replay(["record", "--duration", "6", "--json", "--output", movie.path])
            #expect(result.status == 0, "\(result)")

            let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            #expect(Set(summary.keys).isSuperset(of: ["id", "duration", "frames", "dropped"]))
            #expect(abs((summary["duration"] as? Double ?? 0) - 6) < 0.3)

            let probe = try MediaProbe(movie)
            let video = try #require(probe.video)
            #expect(video.codec == "h264")
            #expect(video.width == 1920 && video.height == 1080)
            #expect(probe.audio.first?.codec == "aac")
            #expect(abs((probe.duration ?? 0) - 6) <= 0.3, "duration \(probe.duration ?? 0)")
            #expect((video.packets ?? 0) >= Int(0.95 * 30 * 6), "only \(video.packets ?? 0) frames")
            #expect((summary["frames"] as? Int) == video.packets)
        }

        @Test func flashAndBeepStayWithinOneFrameWithoutDriftOverTwentySeconds() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon()
            let movie = fixture.file("sync.mp4")
            let result = try fixture.replay(["record", "--duration", "20", "--output", movie.path])
            #expect(result.status == 0, "\(result)")

            let sync = try LipSync(movie)
            #expect(sync.offsets.count >= 17, "flashes \(sync.flashes), beeps \(sync.beeps)")
            #expect(sync.maxAbsoluteOffset <= 1000.0 / 30, "offsets \(sync.offsets)")
            #expect(abs(sync.drift) <= 10, "offsets \(sync.offsets)")
            print("lip sync over 20 s: audio minus video offsets (ms):", sync.offsets.map { ($0 * 10).rounded() / 10 })
            // The demo scene flashes and beeps on whole seconds of the monotonic clock: with the
            // movie's origin on that clock, each side's own lateness can be told apart.
            if let origin = fixture.daemonLog.split(separator: " ").first(where: { $0.hasPrefix("monotonicNs=") })
                .flatMap({ Double($0.dropFirst("monotonicNs=".count)) }) {
                func lateness(_ times: [Double]) -> [Double] {
                    times.map { time in
                        let fraction = (origin / 1e9 + time).truncatingRemainder(dividingBy: 1)
                        return ((fraction > 0.5 ? fraction - 1 : fraction) * 10_000).rounded() / 10
                    }
                }
                print("flash lateness (ms):", lateness(sync.flashes), "beep lateness (ms):", lateness(sync.beeps))
            }
            print(fixture.daemonLog.split(separator: "\n").filter { $0.contains("audio timing corrections") }.joined(separator: "\n"))
        }

        @Test func theMicrophoneIsASecondAudioTrack() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let movie = fixture.file("mic.mp4")
            let result = try fixture.replay(["record", "--duration", "3", "--mic", "--output", movie.path])
            #expect(result.status == 0, "\(result)")
            let probe = try MediaProbe(movie)
            #expect(probe.audio.map(\.codec) == ["aac", "aac"])
            #expect(probe.audio.map(\.title) == ["app audio", "microphone"])
            #expect(probe.audio.allSatisfy { abs(($0.duration ?? 0) - 3) < 0.3 })
        }

        @Test(.serialized, arguments: [(1366, 768), (1921, 1081)])
        func oddDisplaySizesGiveValidMovies(width: Int, height: Int) throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: width, height: height))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let movie = fixture.file("odd.mp4")
            let result = try fixture.replay(["record", "--duration", "3", "--output", movie.path])
            #expect(result.status == 0, "\(result)")
            let probe = try MediaProbe(movie)
            // 4:2:0 video needs even sizes: an odd last column or row is left out.
            #expect(probe.video?.width == width & ~1 && probe.video?.height == height & ~1)
            #expect((probe.video?.packets ?? 0) > 60)
            #expect(abs((probe.duration ?? 0) - 3) <= 0.3)
        }

        @Test func recordingsAreListedAndExportedFromThePrivateStore() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let recorded = try fixture.replay(["record", "--duration", "2", "--json"])
            #expect(recorded.status == 0, "\(recorded)")
            let id = try #require((try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any])?["id"] as? String)

            let permissions = try FileManager.default.attributesOfItem(atPath: fixture.store.path)[.posixPermissions] as? Int
            #expect(permissions == 0o700)

            let listed = try fixture.replay(["recordings", "list", "--json"])
            #expect(listed.status == 0, "\(listed)")
            let list = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
            #expect(list.count == 1)
            #expect(list.first?["id"] as? String == id)
            #expect(list.first?["state"] as? String == "complete")

            let target = fixture.file("exported.mp4")
            let exported = try fixture.replay(["recordings", "export", id, "--to", target.path])
            #expect(exported.status == 0, "\(exported)")
            #expect(try Data(contentsOf: target) == Data(contentsOf: fixture.store.appendingPathComponent("\(id).mp4")))

            let again = try fixture.replay(["recordings", "export", id, "--to", target.path])
            #expect(again.status != 0 && again.stderr.contains("--force"), "\(again)")
            let missing = try fixture.replay(["recordings", "export", "rec-nope", "--to", fixture.file("x.mp4").path])
            #expect(missing.status != 0 && missing.stderr.contains("no recording"), "\(missing)")
            let traversal = try fixture.replay(["recordings", "export", "../../etc/passwd", "--to", fixture.file("y.mp4").path])
            #expect(traversal.status != 0, "\(traversal)")
        }

        @Test func aDaemonStartedOnDemandLeavesWhenIdle() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            let daemon = try ChildProcess(
                path: ReplayFixture.replayd, arguments: ["--socket", fixture.socket, "--store", fixture.store.path, "--idle-exit", "1"],
                environment: ChildProcess.environment(adding: fixture.environment()))
            #expect(daemon.wait(timeout: 10) == 0)
            #expect(!FileManager.default.fileExists(atPath: fixture.socket))
        }

        @Test func theCLIStartsTheDaemonOnDemand() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            let status = try fixture.replay(["status"])
            #expect(status.status == 0, "\(status)")
            #expect(status.stdout.contains("replayd pid"))
            // Stop the daemon the CLI started.
            let pid = try #require(status.stdout.split(separator: " ").dropFirst(2).first
                .flatMap { Int32($0.trimmingCharacters(in: .punctuationCharacters)) }, "\(status)")
            #expect(kill(pid, SIGTERM) == 0)
        }
    }
}
