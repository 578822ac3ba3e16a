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

        /// Started just before a whole second, so the first flash falls in the recording's first
        /// frames: a cold start (memory faulting in on the first grabs) once held them back by
        /// 10 to 40 ms.
        @Test func flashAndBeepStayWithinOneFrameWithoutDriftOverTwentySeconds() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon()
            // Each recording's origin on the monotonic clock, on which the scene flashes on whole seconds.
            func origins() -> [Int64] {
                fixture.daemonLog.split(whereSeparator: \.isWhitespace).filter { $0.hasPrefix("monotonicNs=") }
                    .compactMap { Int64($0.dropFirst("monotonicNs=".count)) }
            }
            // How long `replay record` takes to start recording here and now (about 0.1 s), so
            // that the next one starts just before a flash (a few ms sooner, as its start is warm).
            let launched = MonotonicClock.nanoseconds()
            let warm = try fixture.replay(["record", "--duration", "0.5", "--output", fixture.file("warm.mp4").path])
            let startLatency = try #require(origins().first, "\(warm)") - launched
            let now = MonotonicClock.nanoseconds()
            MonotonicClock.sleep(until: (now / 1_000_000_000 + 2) * 1_000_000_000 - startLatency)
            let movie = fixture.file("sync.mp4")
            let result = try fixture.replay(["record", "--duration", "20", "--output", movie.path])
            #expect(result.status == 0, "\(result)")

            let sync = try LipSync(movie)
            // With the movie's origin on the monotonic clock, each side's own lateness can be told
            // apart: a failure says whether the picture or the sound was late.
            let origin = origins().count == 2 ? origins().last.map(Double.init) : nil
            func lateness(_ times: [Double]) -> [Double] {
                guard let origin else { return [] }
                return times.map { time in
                    let fraction = (origin / 1e9 + time).truncatingRemainder(dividingBy: 1)
                    return ((fraction > 0.5 ? fraction - 1 : fraction) * 10_000).rounded() / 10
                }
            }
            let corrections = fixture.daemonLog.split(separator: "\n").filter { $0.contains("audio timing corrections") }
            let report = """
                offsets (ms) \(sync.offsets.map { ($0 * 10).rounded() / 10 }) at \(sync.flashes.map { ($0 * 1000).rounded() / 1000 }) s; \
                flash lateness (ms) \(lateness(sync.flashes)), beep lateness (ms) \(lateness(sync.beeps)); \
                \(corrections.joined(separator: "; "))
                """
            print("lip sync over 20 s:", report)
            #expect(sync.offsets.count >= 17, "flashes \(sync.flashes), beeps \(sync.beeps)")
            #expect(sync.maxAbsoluteOffset <= LipSync.limit(frames: 1), "\(report)")
            #expect(abs(sync.drift) <= 10, "drift (trend over the recording) \(sync.drift) ms; \(report)")
        }

        /// `replay pause` and `replay resume` from another terminal, three times: the movie is as
        /// long as was recorded (pauses do not count), has no frozen span where it was paused,
        /// and every flash keeps its beep within a frame.
        @Test func threePausesFromAnotherTerminalLeaveNoFrozenSpanAndKeepLipSync() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let movie = fixture.file("paused.mp4")
            let started = Date()
            let recording = try fixture.startReplay(["record", "--duration", "12", "--json", "--output", movie.path])
            let running = poll(timeout: 20, every: 0.1) { () -> String? in
                let status = try? fixture.replay(["status", "--json"])
                let object = status.flatMap { try? JSONSerialization.jsonObject(with: Data($0.stdout.utf8)) as? [String: Any] }
                return (object?["activeRecordings"] as? [String])?.first
            }
            let id = try #require(running, "the recording did not start")
            // The scene flashes and beeps on whole seconds of the monotonic clock; pausing and
            // resuming half-way between keeps every flash whole with its beep (a pause that cut
            // a flash from its beep would pair it with another beep).
            func sleepUntilMidSecond(after seconds: Double) {
                let earliest = MonotonicClock.nanoseconds() + Int64(seconds * 1e9)
                var target = earliest / 1_000_000_000 * 1_000_000_000 + 450_000_000
                if target < earliest { target += 1_000_000_000 }
                Thread.sleep(forTimeInterval: Double(target - MonotonicClock.nanoseconds()) / 1e9)
            }
            var paused = 0.0
            for round in 0..<3 {
                sleepUntilMidSecond(after: 1.8)
                let pause = try fixture.replay(["pause", "--json"])
                #expect(pause.status == 0 && pause.stdout.contains("\"state\":\"paused\"") && pause.stdout.contains(id), "\(pause)")
                let pausedAt = Date()
                // The same again is fine; a named one that does not exist is not.
                #expect(try fixture.replay(["pause", id]).status == 0)
                let wrong = try fixture.replay(["pause", "rec-nope"])
                #expect(wrong.status != 0 && wrong.stderr.contains("no recording 'rec-nope' is running"), "\(wrong)")
                sleepUntilMidSecond(after: 0.8 + Double(round) * 0.5)
                let resume = try fixture.replay(["resume"])
                #expect(resume.status == 0 && resume.stdout.contains("Resumed \(id)"), "\(resume)")
                paused += Date().timeIntervalSince(pausedAt)
            }
            let result = recording.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(2000))")
            let wall = Date().timeIntervalSince(started)
            #expect(wall >= 12 + paused - 0.5, "the recording ended after \(wall) s, paused \(paused) s")

            let probe = try MediaProbe(movie)
            let duration = try #require(probe.duration)
            print("three pauses (\(String(format: "%.1f", paused)) s in all): movie \(duration) s of \(String(format: "%.1f", wall)) s")
            // Paused time is left out, and --duration counts what was recorded.
            #expect(abs(duration - 12) <= 0.5, "movie \(duration) s")
            // No frozen picture: the scene moves every frame, so any freeze is a pause left in.
            let freezes = try Command.run(Command.which("ffmpeg"), [
                "-v", "info", "-i", movie.path, "-map", "0:v:0", "-vf", "freezedetect=n=0.001:d=0.4", "-f", "null", "-",
            ]).stderr.split(separator: "\n").filter { $0.contains("freeze_start") }
            #expect(freezes.isEmpty, "\(freezes)")
            let sync = try LipSync(movie)
            print("lip sync after three pauses: audio minus video offsets (ms):", sync.offsets.map { ($0 * 10).rounded() / 10 })
            #expect(sync.offsets.count >= 8, "flashes \(sync.flashes), beeps \(sync.beeps)")
            #expect(sync.maxAbsoluteOffset <= LipSync.limit(frames: 1), "offsets \(sync.offsets)")
        }

        /// Records 4 s at 30 fps of a desktop that changes for its first second (xsetroot paints
        /// the background anew every few tens of milliseconds) and is still for the rest; the
        /// movie and the duration the daemon recorded.
        static func recordChangingThenStill(_ fixture: ReplayFixture, mode: String) throws -> (movie: URL, duration: Double) {
            let movie = fixture.file("\(mode).mp4")
            let recording = try fixture.startReplay([
                "record", "--duration", "4", "--fps", "30", "--frame-rate-mode", mode, "--audio", "none", "--json", "--output", movie.path,
            ])
            let running = poll(timeout: 20, every: 0.05) { () -> Bool? in
                let status = try? fixture.replay(["status", "--json"])
                let object = status.flatMap { try? JSONSerialization.jsonObject(with: Data($0.stdout.utf8)) as? [String: Any] }
                return (object?["activeRecordings"] as? [String])?.isEmpty == false ? true : nil
            }
            try #require(running != nil, "the recording did not start")
            let changing = Date()
            var colour = 0
            while Date().timeIntervalSince(changing) < 1 {
                _ = try fixture.run(Command.which("xsetroot"), ["-solid", colour % 2 == 0 ? "#204080" : "#806020"])
                colour += 1
            }
            let result = recording.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(1500))")
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            return (movie, try #require(summary["duration"] as? Double))
        }

        /// The video packets' presentation times and durations in the track's time base, and
        /// their times in seconds.
        static func videoPackets(_ movie: URL) throws -> [(pts: Int, duration: Int, seconds: Double)] {
            let result = try Command.run(Command.which("ffprobe"), [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts,pts_time,duration", "-of", "csv=p=0", movie.path,
            ])
            #expect(result.status == 0, "\(result)")
            return result.stdout.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: ",").map(String.init)
                guard fields.count == 3, let pts = Int(fields[0]), let seconds = Double(fields[1]), let duration = Int(fields[2]) else {
                    return nil
                }
                return (pts, duration, seconds)
            }
        }

        /// `--frame-rate-mode cfr`, for video editors: 30 frames every second, the still stretch
        /// and the end included, all one frame long on the 1/30 s grid, and the stream says 30/1.
        @Test func aConstantFrameRateRecordingHasEveryFrameOfItsStillStretch() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, audio: false, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let (movie, duration) = try Self.recordChangingThenStill(fixture, mode: "cfr")

            let probe = try MediaProbe(movie)
            let video = try #require(probe.video)
            let packets = try Self.videoPackets(movie)
            let durations = Set(packets.map(\.duration))
            print("cfr: \(duration) s recorded, \(packets.count) packets, r_frame_rate \(video.frameRate ?? "?"),",
                  "avg_frame_rate \(video.averageFrameRate ?? "?"), durations \(durations), movie \(probe.duration ?? 0) s")
            #expect(abs(packets.count - Int((duration * 30).rounded())) <= 1, "\(packets.count) frames in \(duration) s")
            #expect(video.packets == packets.count)
            #expect(video.frameRate == "30/1")
            #expect(video.averageFrameRate == "30/1")
            #expect(durations.count == 1 && (durations.first ?? 0) > 0, "packet durations \(durations)")
            let step = durations.first ?? 0
            #expect(packets.enumerated().allSatisfy { $0.element.pts - packets[0].pts == $0.offset * step }, "a frame off the grid")
            #expect(packets.first?.seconds == 0, "the first frame at \(packets.first?.seconds ?? -1) s, not on the grid's first step")
            #expect(abs((probe.duration ?? 0) - Double(packets.count) / 30) < 0.01, "movie \(probe.duration ?? 0) s")
        }

        /// Issue 46, item 1: every frame of a `cfr` movie is on the 1/30 s grid from the first on,
        /// with its sound, across a pause and a resize of the screen. (The AAC encoder's priming
        /// once started the sound 21 ms before zero; the muxer moved every track later by it, and
        /// the first picture lasted 1.64 frames.)
        @Test func aConstantFrameRateRecordingIsOnTheGridFromItsFirstFrameWithSoundAPauseAndAResize() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, resizable: true))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let movie = fixture.file("cfr-grid.mp4")
            let recording = try fixture.startReplay(["record", "--duration", "4", "--frame-rate-mode", "cfr", "--json", "--output", movie.path])
            let running = poll(timeout: 20, every: 0.05) { () -> Bool? in
                let status = try? fixture.replay(["status", "--json"])
                let object = status.flatMap { try? JSONSerialization.jsonObject(with: Data($0.stdout.utf8)) as? [String: Any] }
                return (object?["activeRecordings"] as? [String])?.isEmpty == false ? true : nil
            }
            try #require(running != nil, "the recording did not start")
            Thread.sleep(forTimeInterval: 1)
            #expect(try fixture.replay(["pause"]).status == 0)
            Thread.sleep(forTimeInterval: 0.7)
            #expect(try fixture.replay(["resume"]).status == 0)
            Thread.sleep(forTimeInterval: 0.5)
            let display = try #require(fixture.desktop?.display)
            #expect(try Command.run(Command.which("xrandr"), ["-s", "640x400"], environment: ["DISPLAY": display]).status == 0)
            let result = recording.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(1500))")

            let probe = try MediaProbe(movie)
            #expect(probe.audio.count == 1, "the sound is in the movie")
            let packets = try Self.videoPackets(movie)
            #expect(packets.count >= 110, "\(packets.count) frames")
            let offGrid = packets.enumerated().filter { abs($0.element.seconds - Double($0.offset) / 30) > 0.0005 }
            #expect(offGrid.isEmpty, "frames off the grid (index, seconds): \(offGrid.prefix(5).map { ($0.offset, $0.element.seconds) })")
            #expect(fixture.daemonLog.contains("screen resized"), "the screen was resized during the take")
        }

        /// On the grid a picture moves by up to 0.6 of a frame (`ConstantFrameRate`): the flashes
        /// keep their beeps within a frame as a rule, and within two when a flash's own picture
        /// was dropped for an earlier one in its slot and the next picture showed it. (Moving such
        /// pictures a frame instead took every later picture's slot too: in CI a whole recording
        /// ran a frame late, every flash 33–37 ms after its beep.)
        @Test func aConstantFrameRateRecordingKeepsLipSync() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let movie = fixture.file("cfr-sync.mp4")
            let result = try fixture.replay(["record", "--duration", "8", "--frame-rate-mode", "cfr", "--output", movie.path])
            #expect(result.status == 0, "\(result)")
            let sync = try LipSync(movie)
            print("cfr lip sync: audio minus video offsets (ms):", sync.offsets.map { ($0 * 10).rounded() / 10 },
                  fixture.daemonLog.split(separator: "\n").filter { $0.contains("constant frame rate corrections") })
            #expect(sync.offsets.count >= 5, "flashes \(sync.flashes), beeps \(sync.beeps)")
            #expect(sync.medianAbsoluteOffset <= LipSync.limit(frames: 1), "offsets \(sync.offsets)")
            #expect(sync.maxAbsoluteOffset <= LipSync.limit(frames: 2), "offsets \(sync.offsets)")
            #expect(try Self.videoPackets(movie).count == (try #require(MediaProbe(movie).video?.packets)))
        }

        /// The same desktop in the default `vfr`: a still screen costs few frames, a picture a
        /// quarter second.
        @Test func aVariableFrameRateRecordingHasFewFramesOfItsStillStretch() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, audio: false, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let (movie, duration) = try Self.recordChangingThenStill(fixture, mode: "vfr")

            let probe = try MediaProbe(movie)
            let video = try #require(probe.video)
            let packets = try Self.videoPackets(movie)
            let steps = zip(packets.dropFirst(), packets).map { $0.seconds - $1.seconds }
            print("vfr: \(duration) s recorded, \(packets.count) packets, r_frame_rate \(video.frameRate ?? "?"),",
                  "avg_frame_rate \(video.averageFrameRate ?? "?"), packet durations \(Set(packets.map(\.duration)).sorted()),",
                  "steps \(steps.min() ?? 0) … \(steps.max() ?? 0) s")
            // A changing second (up to 30 frames) and three still ones at 4 a second: about 42 of 120.
            #expect(packets.count >= 12 && Double(packets.count) < 0.6 * duration * 30, "\(packets.count) frames in \(duration) s")
            #expect((steps.max() ?? 0) >= 0.2, "the still screen's pictures are a quarter second apart")
        }

        /// `--codec` and `--quality` reach the encoder; combinations that cannot work are refused
        /// before anything is recorded.
        @Test func hevcAndAV1RecordingsAtAQualityStepAndClearRefusals() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            for (codec, quality) in [("hevc", "high"), ("av1", "low")] {
                let movie = fixture.file("\(codec).mp4")
                let result = try fixture.replay(["record", "--duration", "2", "--codec", codec, "--quality", quality, "--output", movie.path])
                #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(1500))")
                let probe = try MediaProbe(movie)
                #expect(probe.video?.codec == codec && probe.video?.width == 640, "\(String(describing: probe.video))")
                #expect(abs((probe.duration ?? 0) - 2) <= 0.4, "\(codec): \(probe.duration ?? 0) s")
            }
            let lossless = try fixture.replay(["record", "--duration", "1", "--codec", "av1", "--quality", "lossless"])
            #expect(lossless.status != 0 && lossless.stderr.contains("SVT-AV1 has no lossless mode"), "\(lossless)")
            let both = try fixture.replay(["record", "--duration", "1", "--quality", "high", "--bitrate", "4000"])
            #expect(both.status != 0 && both.stderr.contains("not both"), "\(both)")
            let unknown = try fixture.replay(["record", "--duration", "1", "--codec", "vp9"])
            #expect(unknown.status != 0 && unknown.stderr.contains("h264") && unknown.stderr.contains("av1"), "\(unknown)")
            #expect(fixture.storedMovies().count == 2)
        }

        /// `--audio-app`: one application's sound, not the rest of what plays (here another tone
        /// and the demo scene's beeps), and a clear word when that application is not playing.
        @Test func oneApplicationsSoundAloneWithAudioApp() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let tones = try [(300, "ToneLow"), (1200, "ToneHigh")].map { frequency, name in
                try fixture.start(Command.which("gst-launch-1.0"), [
                    "-q", "audiotestsrc", "is-live=true", "freq=\(frequency)", "volume=0.4", "!", "pulsesink", "client-name=\(name)",
                ])
            }
            defer { tones.forEach { $0.process.terminate(grace: 2) } }
            // Both playing.
            let playing = poll(timeout: 10, every: 0.2) { () -> Bool? in
                let inputs = (try? fixture.run(Command.which("pactl"), ["list", "sink-inputs"]))?.stdout ?? ""
                return inputs.contains("ToneLow") && inputs.contains("ToneHigh") ? true : nil
            }
            try #require(playing != nil, "the tones did not start playing")

            func dominantFrequency(_ movie: URL) throws -> Double {
                let raw = fixture.file("audio-\(UUID().uuidString).f32")
                defer { try? FileManager.default.removeItem(at: raw) }
                let decoded = try Command.run(Command.which("ffmpeg"), [
                    "-v", "error", "-i", movie.path, "-map", "0:a:0", "-ac", "1", "-ar", "48000", "-f", "f32le", "-y", raw.path,
                ])
                #expect(decoded.status == 0, "\(decoded)")
                let samples = try Data(contentsOf: raw).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
                // The median time between swings from below -0.05 to above +0.05: one period of the
                // tone that sounds; the near-silence around it (whose noise crosses zero at
                // random) never swings that far.
                var rises: [Int] = [], below = false
                for (index, sample) in samples.enumerated() {
                    if sample < -0.05 { below = true } else if sample > 0.05 && below {
                        rises.append(index)
                        below = false
                    }
                }
                let periods = zip(rises, rises.dropFirst()).map { $1 - $0 }.sorted()
                guard !periods.isEmpty else { return 0 }
                return 48_000 / Double(periods[periods.count / 2])
            }

            for (name, frequency) in [("ToneLow", 300.0), ("tonehigh", 1200.0)] {
                let movie = fixture.file("\(name).mp4")
                // --no-notify: the test desktop has no notification server, which would be a warning too.
                let result = try fixture.replay(["record", "--duration", "2", "--audio-app", name, "--output", movie.path, "--no-notify"])
                #expect(result.status == 0 && !result.stderr.contains("warning"), "\(result)")
                let found = try dominantFrequency(movie)
                print("--audio-app \(name): \(Int(found)) Hz")
                #expect(abs(found - frequency) <= frequency * 0.05, "\(name): \(found) Hz, expected \(frequency)")
            }
            // Everything that plays, for contrast: the mix is no longer one clean 300 Hz period.
            let everything = fixture.file("everything.mp4")
            #expect(try fixture.replay(["record", "--duration", "2", "--output", everything.path]).status == 0)
            let mixed = try dominantFrequency(everything)
            #expect(abs(mixed - 300) > 15, "the whole mix measured \(mixed) Hz")

            let missing = try fixture.replay(["record", "--duration", "1", "--audio-app", "nothing-plays"])
            // Named and not playing: refused before recording, saying who does play.
            #expect(missing.status != 0 && missing.stderr.contains("no application named 'nothing-plays' is playing sound now")
                    && missing.stderr.contains("ToneLow"), "\(missing)")
            let contradiction = try fixture.replay(["record", "--duration", "1", "--audio", "mic", "--audio-app", "ToneLow"])
            #expect(contradiction.status != 0 && contradiction.stderr.contains("leaves out"), "\(contradiction)")
        }

        /// A microphone that delivers 2 s blocks, each the sound of the 2 s that just ended
        /// (`BlockMicrophone`, hearing the scene's beep on every flash): its track keeps every
        /// beep within a frame of its flash, and lasts as long as the recording. Dated by the
        /// audio server's interpolated latency, whose write index is stale between timing
        /// updates, such blocks were stamped up to 2 s after they arrived.
        @Test func aMicrophoneThatDeliversTwoSecondBlocksKeepsLipSyncAndTheRecordingsLength() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            let server = try #require(fixture.desktop?.pulseServer)
            let microphone = try BlockMicrophone(server: server, directory: fixture.directory)
            defer { microphone.stop() }
            try fixture.startDaemon()
            let movie = fixture.file("block-mic.mp4")
            let result = try fixture.replay(["record", "--duration", "12", "--mic", "--mic-device", microphone.sourceName,
                                             "--output", movie.path])
            #expect(result.status == 0, "\(result)")
            let sync = try LipSync(movie, audioTrack: 1)
            let corrections = fixture.daemonLog.split(separator: "\n").filter { $0.contains("audio timing corrections") }
            let report = "offsets (ms) \(sync.offsets.map { ($0 * 10).rounded() / 10 }) at \(sync.flashes.map { ($0 * 1000).rounded() / 1000 }) s; "
                + "beeps \(sync.beeps.map { ($0 * 1000).rounded() / 1000 }); \(corrections.joined(separator: "; "))"
            print("block microphone lip sync:", report)
            // The last block may not have arrived when the recording stops: its flashes have no beep.
            #expect(sync.offsets.count >= 7, "\(report)")
            #expect(sync.maxAbsoluteOffset <= LipSync.limit(frames: 1), "\(report)")
            let probe = try MediaProbe(movie)
            let video = try #require(probe.video?.duration)
            let mic = try #require(probe.audio.first { $0.title == "microphone" }?.duration)
            #expect(abs(mic - video) <= 1 / 30.0 + 1024 / 48_000.0, "microphone \(mic) s, video \(video) s")
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

        /// Matroska on export: the store's streams copied, nothing re-encoded, the store untouched.
        @Test func aRecordingIsExportedAsMatroskaByExtensionOrByContainer() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let movie = fixture.file("talk.mkv")
            let recorded = try fixture.replay(["record", "--duration", "2", "--mic", "--json", "--output", movie.path])
            #expect(recorded.status == 0, "\(recorded)")
            let id = try #require((try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any])?["id"] as? String)
            let stored = try MediaProbe(fixture.store.appendingPathComponent("\(id).mp4"))
            let probe = try MediaProbe(movie)
            #expect(probe.formatName?.contains("matroska") == true, "\(probe.formatName ?? "?")")
            #expect(probe.streams.map(\.codec) == stored.streams.map(\.codec) && probe.streams.map(\.codec) == ["h264", "aac", "aac"])
            #expect(probe.video?.packets == stored.video?.packets, "every frame copied")
            #expect(abs((probe.duration ?? 0) - (stored.duration ?? 0)) < 0.1, "\(probe.duration ?? 0) vs \(stored.duration ?? 0)")
            #expect(fixture.storedMovies().count == 1 && (try? FileManager.default.contentsOfDirectory(atPath: fixture.store.path))?
                .contains { $0.hasPrefix(".export-") } == false, "the export's copy is left in the store")

            let named = fixture.file("later.video")
            let exported = try fixture.replay(["recordings", "export", id, "--to", named.path, "--container", "mkv"])
            #expect(exported.status == 0, "\(exported)")
            #expect(try MediaProbe(named).formatName?.contains("matroska") == true)
            let refused = try fixture.replay(["record", "--duration", "1", "--container", "mkv"])
            #expect(refused.status != 0 && refused.stderr.contains("--output"), "\(refused)")
        }

        /// A trimmed export: 10 s recorded, 3–7 s exported through the CLI, 4 s that decode cleanly.
        @Test func aSpanOfARecordingIsExportedThroughTheCLI() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let recorded = try fixture.replay(["record", "--duration", "10", "--fps", "30", "--frame-rate-mode", "cfr", "--mic", "--json"])
            #expect(recorded.status == 0, "\(recorded)")
            let id = try #require((try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any])?["id"] as? String)

            let target = fixture.file("span.mp4")
            let exported = try fixture.replay(["recordings", "export", id, "--to", target.path, "--from", "3", "--until", "7"])
            #expect(exported.status == 0, "\(exported)\n\(fixture.daemonLog.suffix(1500))")
            let probe = try MediaProbe(target)
            #expect(abs((probe.duration ?? 0) - 4) <= 0.1, "lasts \(probe.duration ?? 0) s")
            #expect(probe.streams.map(\.codec) == ["h264", "aac", "aac"])
            let decoded = try Command.run(Command.which("ffmpeg"), ["-v", "error", "-i", target.path, "-f", "null", "-"])
            #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded)")
            #expect((try? FileManager.default.contentsOfDirectory(atPath: fixture.store.path))?.contains { $0.hasPrefix(".export-") } == false)

            let matroska = fixture.file("span.mkv")
            let tail = try fixture.replay(["recordings", "export", id, "--to", matroska.path, "--from", "8.5"])
            #expect(tail.status == 0, "\(tail)")
            #expect(abs((try MediaProbe(matroska).duration ?? 0) - 1.5) <= 0.2)
            let late = try fixture.replay(["recordings", "export", id, "--to", fixture.file("late.mp4").path, "--from", "30"])
            #expect(late.status != 0 && late.stderr.contains("end of"), "\(late)")
            let backwards = try fixture.replay(["recordings", "export", id, "--to", fixture.file("b.mp4").path, "--from", "5", "--until", "2"])
            #expect(backwards.status != 0 && backwards.stderr.contains("--until"), "\(backwards)")
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
