import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// What an upload extension hears, whatever the audio devices' formats: ReplayKit's
    /// 1024-frame periods, each stamped right after the one before, as long as the video.
    @Suite struct BroadcastAudio {
        /// One PulseAudio device's format.
        struct DeviceFormat: CustomStringConvertible, Sendable {
            let rate: Int
            let channels: Int
            var description: String { "\(rate) Hz \(channels == 1 ? "mono" : "stereo")" }
        }

        static let seconds = 30.0

        /// Three broadcasts cover every rate for both sources, and both layouts.
        @Test(arguments: [
            (DeviceFormat(rate: 44_100, channels: 1), DeviceFormat(rate: 22_050, channels: 1)),
            (DeviceFormat(rate: 22_050, channels: 2), DeviceFormat(rate: 48_000, channels: 2)),
            (DeviceFormat(rate: 48_000, channels: 1), DeviceFormat(rate: 44_100, channels: 2)),
        ])
        func periodsAreSteadyAndAsLongAsTheVideo(microphone: DeviceFormat, speakers: DeviceFormat) throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            let server = try #require(fixture.desktop?.pulseServer)
            for arguments in [
                // A null sink's monitor keeps real time, as a sound card's capture does (a
                // module-null-source hands out its silence in bursts a second apart).
                ["load-module", "module-null-sink", "sink_name=test_mic", "rate=\(microphone.rate)", "channels=\(microphone.channels)"],
                ["load-module", "module-null-sink", "sink_name=test_speakers", "rate=\(speakers.rate)", "channels=\(speakers.channels)"],
                ["set-default-source", "test_mic.monitor"], ["set-default-sink", "test_speakers"],
            ] {
                let result = try Command.run("/usr/bin/pactl", ["--server=\(server)"] + arguments)
                try #require(result.status == 0, "\(result)")
            }
            // Something plays into each, as into a real device: an idle null sink keeps a
            // latency of seconds, and its monitor's stamps with it.
            let players = try ["test_mic", "test_speakers"].map { sink in
                try Command.start("/usr/bin/pacat", ["--server=\(server)", "--playback", "--device=\(sink)", "--latency-msec=20", "/dev/zero"])
            }
            defer { players.forEach { $0.process.terminate(); _ = $0.finish(timeout: 5) } }
            try fixture.startDaemon(Broadcast.installExtensions(in: fixture))
            let output = fixture.file("out")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            let start = try fixture.replay(["broadcast", "start", "--extension", "file", "--setup", "dir=\(output.path)", "--mic", "--json"])
            try #require(start.status == 0, "\(start)\n\(fixture.daemonLog)")
            Thread.sleep(forTimeInterval: Self.seconds)
            let stop = try fixture.replay(["broadcast", "stop"])
            #expect(stop.status == 0, "\(stop)")

            let lines = try String(contentsOf: output.appendingPathComponent("broadcast.jsonl"), encoding: .utf8)
                .split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let video = lines.filter { $0["event"] as? String == "video" }.compactMap { $0["time"] as? Double }
            let videoSpan = try #require(video.last) - video.first!
            for (event, format) in [("micAudio", microphone), ("appAudio", speakers)] {
                let periods = lines.filter { $0["event"] as? String == event }
                try #require(periods.count > 10, "\(event): \(periods.count) periods")
                let frames = periods.compactMap { $0["frames"] as? Int }
                #expect(Set(frames) == [1024], "\(event) from \(format): period sizes \(Set(frames))")
                let rate = try #require(periods.first?["rate"] as? Int)
                let times = periods.compactMap { $0["time"] as? Double }
                // Each period starts where the one before ended, within a millisecond.
                let steps = zip(zip(times, frames), times.dropFirst()).map { $1 - $0.0 - Double($0.1) / Double(rate) }
                let worst = steps.max { abs($0) < abs($1) } ?? 0
                #expect(abs(worst) < 0.001, "\(event) from \(format): a step off by \(Int(worst * 1000)) ms")
                #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "\(event) from \(format): time went backwards")
                let audioSpan = Double(frames.reduce(0, +)) / Double(rate)
                #expect(abs(audioSpan - videoSpan) < 0.020 + 1024 / Double(rate) + 1 / 30.0,
                        "\(event) from \(format): \(audioSpan) s of audio over \(videoSpan) s of video; audio \(times.first!)…\(times.last!), video \(video.first!)…\(video.last!); \(fixture.daemonLog.split(separator: "\n").filter { $0.contains("kept on the clock") })")
            }
        }

        /// A microphone that delivers 2 s blocks (`BlockMicrophone`), in a broadcast: as many
        /// periods as the app's, as long as the video, none stamped after it reached the
        /// extension (the pictures around it say when that was), and its beeps on the flashes.
        /// Dated by the audio server's interpolated latency, such a microphone once sent 1,028
        /// periods against the app's 939 in 20 s, 3.7 s of silence first, stamped up to 1.98 s
        /// after they arrived.
        @Test func aMicrophoneThatDeliversTwoSecondBlocksKeepsPaceWithTheVideo() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            let server = try #require(fixture.desktop?.pulseServer)
            let microphone = try BlockMicrophone(server: server, directory: fixture.directory)
            defer { microphone.stop() }
            // A broadcast records the default source.
            let chosen = try Command.run("/usr/bin/pactl", ["--server=\(server)", "set-default-source", microphone.sourceName])
            try #require(chosen.status == 0, "\(chosen)")
            try fixture.startDaemon(Broadcast.installExtensions(in: fixture))
            let output = fixture.file("out")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            let start = try fixture.replay(["broadcast", "start", "--extension", "file", "--setup", "dir=\(output.path)", "--mic"])
            try #require(start.status == 0, "\(start)\n\(fixture.daemonLog)")
            Thread.sleep(forTimeInterval: 12)
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)

            let lines = try String(contentsOf: output.appendingPathComponent("broadcast.jsonl"), encoding: .utf8)
                .split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let video = lines.filter { $0["event"] as? String == "video" }.compactMap { $0["time"] as? Double }
            let mic = lines.filter { $0["event"] as? String == "micAudio" }.compactMap { $0["time"] as? Double }
            let app = lines.filter { $0["event"] as? String == "appAudio" }.compactMap { $0["time"] as? Double }
            try #require(mic.count > 100 && app.count > 100, "\(mic.count) mic periods, \(app.count) app periods")
            // In the order the extension heard them: a period is never stamped after the latest
            // picture that came before it (pictures are stamped as they are taken).
            var latestPicture = -Double.infinity, worstLead = -Double.infinity
            for line in lines {
                guard let time = line["time"] as? Double else { continue }
                switch line["event"] as? String {
                case "video": latestPicture = max(latestPicture, time)
                case "micAudio" where latestPicture > -Double.infinity: worstLead = max(worstLead, time + 1024 / 48_000.0 - latestPicture)
                default: break
                }
            }
            #expect(worstLead <= 0.1, "a microphone period ended \(worstLead) s after the latest picture before it")
            // Never more than the app's (the issue's microphone ran 89 periods ahead). Its sound
            // comes a block late, so at the stop the block being captured is not sent: up to 2 s
            // fewer (0.6 to 1.2 s seen; 1.5 to 3.2 s when a block waited for the next one).
            let behind = Double(app.count - mic.count) * 1024 / 48_000
            #expect(mic.count <= app.count + 1 && behind <= 2.5, "\(mic.count) mic periods, \(app.count) app periods")
            let videoSpan = try #require(video.last) - video.first!
            let micSpan = Double(mic.count) * 1024 / 48_000
            #expect(micSpan <= videoSpan + 0.1 && micSpan >= videoSpan - 2.5, "\(micSpan) s of microphone over \(videoSpan) s of video")
            print("block microphone in a broadcast: \(mic.count) mic periods, \(app.count) app periods, \(micSpan) s of it over "
                  + "\(videoSpan) s of video; a period ended at most \(worstLead) s after the latest picture before it")
        }
    }
}
