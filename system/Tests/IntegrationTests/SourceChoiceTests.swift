import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// Choosing what to record on X11: `replay sources` lists it, and a monitor, a region or
    /// a window is recorded, checked by its pixels. The screen is split into two RandR
    /// monitors, left and right, with solid windows of known colours on them.
    @Suite struct SourceChoice {
        /// Two monitors side by side on the fixture's 1920x1080 Xvfb.
        static func splitIntoTwoMonitors(_ fixture: ReplayFixture) throws {
            for (name, left) in [("left", 0), ("right", 960)] {
                let result = try fixture.run(Command.which("xrandr"), ["--setmonitor", name, "960/254x1080/286+\(left)+0", "none"])
                #expect(result.status == 0, "\(result)")
            }
        }

        /// A solid window of the example app (it draws a white strip with text near its top).
        static func window(_ fixture: ReplayFixture, colour: String, at geometry: String) throws -> (RunningCommand, UInt32) {
            let app = try fixture.startApp(["--colour", colour, "--geometry", geometry, "--no-protect", "--stay", "120"])
            let shown = try #require(app.waitForJSONLine { $0["event"] as? String == "window" }, "\(app.outputSoFar)")
            return (app, UInt32(try #require(shown["id"] as? Int)))
        }

        /// The movie in the store of the recording an app reported (the app itself never sees it).
        static func storedMovie(of app: CommandResult, in fixture: ReplayFixture) throws -> URL {
            let id = try #require(app.jsonLines.first { $0["event"] as? String == "recorded" }?["id"] as? String, "\(app)")
            return fixture.store.appendingPathComponent("\(id).mp4")
        }

        static func isGreen(_ c: DecodedFrame.RGB) -> Bool { c.g > 200 && c.r < 60 && c.b < 60 }
        static func isBlue(_ c: DecodedFrame.RGB) -> Bool { c.b > 200 && c.r < 60 && c.g < 60 }

        @Test func sourcesListsTheMonitorsWindowsAndAudioDevices() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try Self.splitIntoTwoMonitors(fixture)
            let added = try fixture.run(Command.which("pactl"), [
                "load-module", "module-null-sink", "sink_name=headphones", "sink_properties=device.description=Headphones",
            ])
            #expect(added.status == 0, "\(added)")
            try fixture.startDaemon()
            let (app, id) = try Self.window(fixture, colour: "green", at: "100,120,400,300")
            defer { app.process.terminate() }

            let result = try fixture.replay(["sources", "--json"])
            #expect(result.status == 0, "\(result)")
            let listing = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result)")
            let monitors = try #require(listing["monitors"] as? [[String: Any]])
            let placed = Dictionary(uniqueKeysWithValues: monitors.compactMap { monitor in
                (monitor["name"] as? String).map { ($0, [monitor["x"], monitor["y"], monitor["width"], monitor["height"]].compactMap { $0 as? Int }) }
            })
            #expect(placed["left"] == [0, 0, 960, 1080] && placed["right"] == [960, 0, 960, 1080], "\(monitors)")
            let windows = try #require(listing["windows"] as? [[String: Any]])
            let note = try #require(windows.first { ($0["id"] as? Int).map(UInt32.init) == id }, "window \(id) not in \(windows)")
            #expect(note["title"] as? String == "Secret notes", "\(note)")
            #expect([note["x"], note["y"], note["width"], note["height"]].compactMap { $0 as? Int } == [100, 120, 400, 300], "\(note)")
            #expect((note["pid"] as? Int).map(Int32.init) == app.process.pid, "\(note)")
            let outputs = try #require(listing["audioOutputs"] as? [[String: Any]])
            #expect(outputs.contains { $0["name"] as? String == "headphones" && $0["description"] as? String == "Headphones" }, "\(outputs)")
            #expect(outputs.contains { $0["name"] as? String == "replay_speakers" && $0["isDefault"] as? Bool == true }, "\(outputs)")
            let inputs = try #require(listing["audioInputs"] as? [[String: Any]])
            // Inputs are microphones: no output's monitor is among them.
            #expect(inputs.map { $0["name"] as? String } == ["replay_microphone"], "\(inputs)")
            #expect((listing["capture"] as? [String: Any])?["backend"] as? String == "x11")

            // The table a person reads names the flags each list is for.
            let table = try fixture.replay(["sources"])
            #expect(table.stdout.contains("--monitor NAME") && table.stdout.contains("0x" + String(id, radix: 16))
                    && table.stdout.contains("Headphones"), "\(table)")
        }

        @Test func aMonitorAndARegionAreRecordedAtTheirSizeShowingWhatIsThere() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try Self.splitIntoTwoMonitors(fixture)
            try fixture.startDaemon()
            let (green, _) = try Self.window(fixture, colour: "green", at: "100,100,400,300")
            defer { green.process.terminate() }
            let (blue, _) = try Self.window(fixture, colour: "blue", at: "1200,500,400,300")
            defer { blue.process.terminate() }

            let right = fixture.file("right.mp4")
            let monitor = try fixture.replay(["record", "--monitor", "right", "--duration", "2", "--no-app-audio", "--output", right.path])
            #expect(monitor.status == 0, "\(monitor)")
            #expect(try MediaProbe(right).video.map { [$0.width, $0.height] } == [960, 1080])
            let onRight = try DecodedFrame(right, at: 1, width: 960, height: 1080)
            // The blue window at 1200,500 is at 240,500 on the right monitor; the green one is on the left.
            #expect(onRight.fraction(x: 250, y: 600, width: 380, height: 190, Self.isBlue) > 0.99)
            #expect(onRight.fraction(x: 0, y: 0, width: 960, height: 1080, Self.isGreen) == 0)

            let region = fixture.file("region.mp4")
            let cut = try fixture.replay(["record", "--region", "400x300+100+100", "--duration", "2", "--no-app-audio", "--output", region.path])
            #expect(cut.status == 0, "\(cut)")
            #expect(try MediaProbe(region).video.map { [$0.width, $0.height] } == [400, 300])
            let inRegion = try DecodedFrame(region, at: 1, width: 400, height: 300)
            // All of it is the green window, but for the white strip with text near its top.
            #expect(inRegion.fraction(x: 0, y: 90, width: 400, height: 210, Self.isGreen) > 0.99)

            let outside = try fixture.replay(["record", "--region", "400x300+1800+100", "--duration", "1"])
            #expect(outside.status != 0 && outside.stderr.contains("does not lie on the 1920x1080 screen"), "\(outside)")
            let nowhere = try fixture.replay(["record", "--monitor", "middle", "--duration", "1"])
            #expect(nowhere.status != 0 && nowhere.stderr.contains("no monitor named 'middle'")
                    && nowhere.stderr.contains("left"), "\(nowhere)")
        }

        @Test func aWindowIsFollowedAsItMovesAndResizesAndFittedIntoTheMovie() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon()
            let (blue, id) = try Self.window(fixture, colour: "blue", at: "1200,500,400,300")
            defer { blue.process.terminate() }

            let movie = fixture.file("window.mp4")
            let recording = try fixture.startReplay(["record", "--window", "0x" + String(id, radix: 16), "--duration", "4",
                                                     "--no-app-audio", "--output", movie.path])
            Thread.sleep(forTimeInterval: 1.5)
            // Moved across the screen, then twice as wide as it is high: the movie keeps 400x300.
            let moved = try fixture.run(Command.which("xdotool"), ["windowmove", String(id), "300", "600"])
            let resized = try fixture.run(Command.which("xdotool"), ["windowsize", String(id), "600", "300"])
            #expect(moved.status == 0 && resized.status == 0, "\(moved)\n\(resized)")
            let result = recording.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(2000))")
            #expect(try MediaProbe(movie).video.map { [$0.width, $0.height] } == [400, 300])

            let before = try DecodedFrame(movie, at: 0.8, width: 400, height: 300)
            #expect(before.fraction(x: 0, y: 90, width: 400, height: 210, Self.isBlue) > 0.99)
            // 600x300 fitted into 400x300 is 400x200 with bars of 50 above and below; had the
            // window not been followed, the demo scene at its old place would show instead.
            let after = try DecodedFrame(movie, at: 3.5, width: 400, height: 300)
            #expect(after.blackFraction(x: 0, y: 0, width: 400, height: 48) > 0.99, "no bar above")
            #expect(after.blackFraction(x: 0, y: 252, width: 400, height: 48) > 0.99, "no bar below")
            #expect(after.fraction(x: 0, y: 120, width: 400, height: 126, Self.isBlue) > 0.99)

            // A closed window ends the recording; what was recorded is kept.
            let closing = try fixture.startReplay(["record", "--window", String(id), "--no-app-audio", "--json"])
            Thread.sleep(forTimeInterval: 1.5)
            blue.process.terminate()
            let closed = closing.finish(timeout: 30)
            #expect(closed.stderr.contains("the recorded window was closed"), "\(closed)")
            #expect(fixture.storedMovies().count == 2)
        }

        /// The SDK's content filter: an app records one monitor with another app's window
        /// excluded, and then only a window of its own (another app's would be all black).
        @Test func anAppsContentFilterRecordsAMonitorWithoutExcludedWindowsOrOnlyItsOwnWindow() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try Self.splitIntoTwoMonitors(fixture)
            try fixture.startDaemon(Privacy.allowExampleApp(in: fixture))
            let (green, greenID) = try Self.window(fixture, colour: "green", at: "1200,100,400,300")
            defer { green.process.terminate() }

            let monitor = try fixture.startApp(["--colour", "blue", "--geometry", "1200,600,400,300", "--no-protect",
                                                "--record", "2", "--record-monitor", "right",
                                                "--exclude-window", String(greenID)])
            let recorded = monitor.finish(timeout: 60)
            #expect(recorded.status == 0, "\(recorded)\n\(fixture.daemonLog.suffix(2000))")
            let movie = try Self.storedMovie(of: recorded, in: fixture)
            #expect(try MediaProbe(movie).video.map { [$0.width, $0.height] } == [960, 1080])
            let frame = try DecodedFrame(movie, at: 1, width: 960, height: 1080)
            // The app's own blue window at 1200,600 is at 240,600 on the right monitor; the green one is black.
            #expect(frame.fraction(x: 250, y: 690, width: 380, height: 200, Self.isBlue) > 0.95)
            #expect(frame.blackFraction(x: 250, y: 110, width: 380, height: 280) > 0.99)

            let own = try fixture.startApp(["--colour", "blue", "--geometry", "100,600,400,300", "--no-protect",
                                            "--record", "2", "--record-own-window"])
            let ownResult = own.finish(timeout: 60)
            #expect(ownResult.status == 0, "\(ownResult)")
            let window = try Self.storedMovie(of: ownResult, in: fixture)
            #expect(try MediaProbe(window).video.map { [$0.width, $0.height] } == [400, 300])
            #expect(try DecodedFrame(window, at: 1, width: 400, height: 300).fraction(x: 0, y: 90, width: 400, height: 210, Self.isBlue) > 0.95)

            // Another app's window as its filter: all black, as the app may see only its own.
            let other = try fixture.startApp(["--colour", "blue", "--geometry", "100,600,400,300", "--no-protect",
                                              "--record", "2", "--record-window", String(greenID)])
            let otherResult = other.finish(timeout: 60)
            #expect(otherResult.status == 0, "\(otherResult)")
            #expect(try DecodedFrame(Self.storedMovie(of: otherResult, in: fixture), at: 1, width: 400, height: 300)
                .blackFraction(x: 0, y: 0, width: 400, height: 300) > 0.99)
        }

        @Test func pickingAWindowRecordsTheOneClicked() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon()
            let (green, _) = try Self.window(fixture, colour: "green", at: "100,100,400,300")
            defer { green.process.terminate() }

            let movie = fixture.file("picked.mp4")
            let recording = try fixture.startReplay(["record", "--window", "pick", "--duration", "2", "--no-app-audio",
                                                     "--output", movie.path])
            _ = recording.waitForErrors(containing: "Click the window")
            #expect(recording.errorsSoFar.contains("Click the window to record"), "\(recording.errorsSoFar)")
            // The daemon grabs the pointer right after saying so.
            Thread.sleep(forTimeInterval: 0.5)
            let click = try fixture.run(Command.which("xdotool"), ["mousemove", "300", "250", "click", "1"])
            #expect(click.status == 0, "\(click)")
            let result = recording.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(2000))")
            #expect(try MediaProbe(movie).video.map { [$0.width, $0.height] } == [400, 300])
            let frame = try DecodedFrame(movie, at: 1, width: 400, height: 300)
            #expect(frame.fraction(x: 0, y: 90, width: 400, height: 210, Self.isGreen) > 0.95)
        }
    }
}
