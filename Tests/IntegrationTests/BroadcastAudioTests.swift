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
    }
}
