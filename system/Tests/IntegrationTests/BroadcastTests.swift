import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// Upload extensions, run by a real replayd in a real bubblewrap sandbox.
    @Suite struct Broadcast {
        /// Installs the reference and hostile extensions in a directory of the fixture's and
        /// returns the daemon arguments that point at it.
        static func installExtensions(in fixture: ReplayFixture) throws -> [String] {
            let directory = fixture.file("extensions")
            let manifests = [
                ExtensionManifest(id: "file", displayName: "Write to a file", executable: "replay-file-extension",
                                  setupFields: [.init(key: "dir", label: "Directory", kind: .directory, required: true)],
                                  description: "Writes what it receives into a file.", icon: "document-save"),
                ExtensionManifest(id: "hostile", displayName: "Misbehaves", executable: "replay-hostile-extension",
                                  setupFields: [.init(key: "behaviour", label: "How to misbehave", required: true),
                                                .init(key: "path", label: "A file to try to read", required: false),
                                                .init(key: "url", label: "Its ingest server", required: false),
                                                .init(key: "ports", label: "Loopback ports to knock on", required: false)]),
            ]
            for manifest in manifests { try ExtensionInstall.install(manifest, in: directory) }
            return ["--extensions-dir", directory.path]
        }

        static func status(_ fixture: ReplayFixture) throws -> [[String: Any]] {
            let result = try fixture.replay(["broadcast", "status", "--json"])
            guard let statuses = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]] else {
                throw StatusError(description: "replay broadcast status --json gave no list: \(result)\n\(fixture.daemonLog.suffix(3000))")
            }
            return statuses
        }

        struct StatusError: Error, CustomStringConvertible {
            let description: String
        }

        /// The latest broadcast's status (the list is oldest first).
        static func latestStatus(_ fixture: ReplayFixture) throws -> [String: Any]? { try status(fixture).last }

        /// Waits until the latest broadcast's status `matches`; returns it, or the last one seen.
        static func waitForStatus(_ fixture: ReplayFixture, timeout: Double = 20, _ matches: ([String: Any]) -> Bool) throws
            -> [String: Any]? {
            try poll(timeout: timeout, every: 0.2) { try latestStatus(fixture).flatMap { matches($0) ? $0 : nil } }
                ?? latestStatus(fixture)
        }

        /// Waits until the latest broadcast is over; returns its status.
        static func waitUntilOver(_ fixture: ReplayFixture, timeout: Double = 20) throws -> [String: Any]? {
            try waitForStatus(fixture, timeout: timeout) { ["finished", "failed"].contains($0["state"] as? String ?? "") }
        }

        @Test func anExtensionGetsTheLifecycleInOrderVideoAtMost30FpsAndBothAudioTypes() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.installExtensions(in: fixture))
            let listed = try fixture.replay(["extensions", "list", "--json"])
            #expect(listed.stdout.contains("\"file\"") && listed.stdout.contains("\"hostile\""), "\(listed)")

            let output = fixture.file("out")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            let start = try fixture.replay(["broadcast", "start", "--extension", "file", "--setup", "dir=\(output.path)", "--mic",
                                            "--fps", "60", "--json"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog)")
            Thread.sleep(forTimeInterval: 2)
            #expect(try fixture.replay(["broadcast", "pause"]).status == 0)
            Thread.sleep(forTimeInterval: 1)
            #expect(try fixture.replay(["broadcast", "resume"]).status == 0)
            Thread.sleep(forTimeInterval: 2)
            let stop = try fixture.replay(["broadcast", "stop", "--json"])
            #expect(stop.status == 0, "\(stop)")
            let final = try #require(try Self.latestStatus(fixture))
            #expect(final["state"] as? String == "finished", "\(final)")
            #expect((final["broadcastURL"] as? String)?.hasPrefix("file://") == true, "\(final)")

            let lines = try String(contentsOf: output.appendingPathComponent("broadcast.jsonl"), encoding: .utf8)
                .split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let events = lines.compactMap { $0["event"] as? String }
            // Lifecycle in order, with samples between.
            let lifecycle = events.filter { ["started", "annotated", "paused", "resumed", "finished"].contains($0) }
            #expect(lifecycle == ["started", "annotated", "paused", "resumed", "finished"], "\(events.prefix(20))")
            #expect((lines.first?["setup"] as? [String: String])?["dir"] == output.path)
            let firstSample = try #require(events.firstIndex { $0 == "video" })
            #expect(firstSample > events.firstIndex(of: "annotated")!)
            // Nothing while paused.
            let paused = events.firstIndex(of: "paused")!, resumed = events.firstIndex(of: "resumed")!
            #expect(events[paused + 1] == "resumed" || events[(paused + 1)..<resumed].allSatisfy { $0 != "video" })
            // Video at most 30 fps even though 60 were asked; the demo scene moves, so close to 30.
            let times = lines.filter { $0["event"] as? String == "video" }.compactMap { $0["time"] as? Double }
            let span = try #require(times.last) - times.first!
            let rate = Double(times.count - 1) / span
            #expect(rate <= 31 && rate >= 20, "video at \(rate) fps over \(span) s")
            #expect(lines.contains { $0["event"] as? String == "video" && $0["width"] as? Int == 640 && $0["height"] as? Int == 480 })
            #expect(events.contains("appAudio") && events.contains("micAudio"), "\(Set(events))")
        }

        @Test(arguments: [
            ("write-surface", "crashed (SIGSEGV)"),
            ("allocate", "more than 50 MiB"),
            ("hang", "stopped responding"),
            ("garbage", "malformed message"),
        ])
        func aHostileExtensionEndsOnlyItsOwnBroadcastWithAClearError(behaviour: String, expected: String) throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.installExtensions(in: fixture))
            // A recording runs meanwhile, and must not notice.
            let recording = try fixture.startReplay(["record", "--duration", "12", "--json"])
            Thread.sleep(forTimeInterval: 1)
            let start = try fixture.replay(["broadcast", "start", "--extension", "hostile", "--setup", "behaviour=\(behaviour)"])
            #expect(start.status == 0 || start.stderr.contains(expected), "\(start)")
            let final = try #require(try Self.waitUntilOver(fixture), "\(fixture.daemonLog)")
            #expect(final["state"] as? String == "failed", "\(final)")
            #expect((final["lastError"] as? String ?? "").contains(expected), "\(final)")
            #expect(fixture.daemon?.isRunning == true)
            // Ended means ended: nothing of the sandbox is left, not even a hung extension.
            let hostile = VirtualDesktop.siblingExecutable("replay-hostile-extension").path
            let left = poll(timeout: 5, every: 0.1) { processes(running: hostile).isEmpty ? [] : nil } ?? processes(running: hostile)
            #expect(left.isEmpty, "still running: \(left)")
            let recorded = recording.finish(timeout: 30)
            #expect(recorded.status == 0, "\(recorded)")
            let summary = try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any]
            #expect(abs((summary?["duration"] as? Double ?? 0) - 12) < 0.5, "\(recorded)")
            #expect(summary?["error"] == nil || summary?["error"] is NSNull, "\(recorded)")
        }

        @Test func aSlowExtensionMakesTheDaemonDropAndCountFramesWithoutGrowing() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.installExtensions(in: fixture))
            let daemon = try #require(fixture.daemon)
            let start = try fixture.replay(["broadcast", "start", "--extension", "hostile", "--setup", "behaviour=slow"])
            #expect(start.status == 0, "\(start)")
            Thread.sleep(forTimeInterval: 1)
            let before = Self.residentMegabytes(daemon.pid)
            Thread.sleep(forTimeInterval: 5)
            let after = Self.residentMegabytes(daemon.pid)
            let status = try #require(try Self.latestStatus(fixture))
            #expect(status["state"] as? String == "live", "\(status)")
            let sent = status["framesSent"] as? Int ?? 0, dropped = status["framesDropped"] as? Int ?? 0
            // The moving demo scene offers ~30 frames a second; the extension takes ~2.5.
            #expect(dropped > 30 && sent < 40, "sent \(sent), dropped \(dropped)")
            // The handler learns the drops too, with the pictures that follow them.
            let told = Int((status["serviceInfo"] as? [String: String])?["droppedTold"] ?? "") ?? 0
            #expect(told > 0 && told <= dropped, "the handler was told \(told) drops of \(dropped)")
            #expect(after - before < 16, "replayd grew from \(before) MB to \(after) MB")
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
        }

        /// Issue 46, item 3: an extension that keeps all four picture surfaces gets four pictures
        /// and then none; the frames lost meanwhile are counted in the status, and its handler
        /// hears of them while it still holds the four (once, they all said 0).
        @Test func anExtensionHoldingEverySurfaceHearsOfItsDropsAndTheStatusCountsThem() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.installExtensions(in: fixture))
            let start = try fixture.replay(["broadcast", "start", "--extension", "hostile", "--setup", "behaviour=keep-all"])
            #expect(start.status == 0, "\(start)")
            // The moving demo scene offers ~30 pictures a second; after the first four, every one is lost.
            let status = try #require(try Self.waitForStatus(fixture) { status in
                let told = Int((status["serviceInfo"] as? [String: String])?["droppedTold"] ?? "") ?? 0
                return (status["framesDropped"] as? Int ?? 0) > 30 && told > 30
            }, "\(fixture.daemonLog.suffix(2000))")
            let sent = status["framesSent"] as? Int ?? 0, dropped = status["framesDropped"] as? Int ?? 0
            let told = Int((status["serviceInfo"] as? [String: String])?["droppedTold"] ?? "") ?? 0
            #expect(status["state"] as? String == "live", "\(status)")
            #expect(sent == 4, "the extension holds the four pictures it got: \(status)")
            #expect(dropped > 30 && told > 30 && told <= dropped, "dropped \(dropped), the handler was told \(told)")
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            let final = try #require(try Self.waitUntilOver(fixture))
            let finalDropped = final["framesDropped"] as? Int ?? 0
            #expect(finalDropped >= dropped, "\(final)")
            let ended = fixture.daemonLog.split(separator: "\n").filter { $0.contains("broadcast ended") }
            #expect(ended.contains { $0.contains("dropped=\(finalDropped)") }, "the end-of-broadcast log counts them: \(ended)")
        }

        /// On a still screen (no demo scene) replayd repeats the last picture a few times a second:
        /// the extension sees those pictures flagged as repeats, and its ticks keep coming.
        @Test func aStillScreensRepeatsAreFlaggedAndTicksKeepComing() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.installExtensions(in: fixture))
            let output = fixture.file("still")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            let start = try fixture.replay(["broadcast", "start", "--extension", "file", "--setup", "dir=\(output.path)"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog)")
            Thread.sleep(forTimeInterval: 4)
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            let lines = try String(contentsOf: output.appendingPathComponent("broadcast.jsonl"), encoding: .utf8)
                .split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let videos = lines.filter { $0["event"] as? String == "video" }
            let repeats = videos.filter { $0["repeat"] as? Bool == true }
            #expect(videos.count >= 4 && repeats.count >= videos.count - 2,
                    "\(repeats.count) of \(videos.count) pictures flagged as repeats on a still screen")
            let ticks = lines.filter { $0["event"] as? String == "tick" }.compactMap { $0["time"] as? Double }
            #expect(ticks.count >= 2, "\(ticks.count) ticks in 4 s")
        }

        /// Starts the daemon, a consent agent and the example app going live with `appArguments`,
        /// and opens the picker page the agent was offered in headless Chromium.
        static func openPicker(_ fixture: ReplayFixture, appArguments: [String], extensions: [String]? = nil) throws
            -> (app: RunningCommand, browser: HeadlessBrowser, page: HeadlessBrowser.Page) {
            try fixture.startDaemon(extensions ?? installExtensions(in: fixture))
            let agent = try fixture.startConsentAgent(["--json"])
            let app = try fixture.startApp(["--no-protect", "--geometry", "0,0,200,200"] + appArguments)
            let offer = try #require(agent.waitForJSONLine { $0["pickerOffered"] != nil }, "\(agent.outputSoFar)\n\(app.outputSoFar)")
            let url = try #require(((offer["pickerOffered"] as? [String: Any])?["offer"] as? [String: Any])?["pageURL"] as? String)
            let browser = try HeadlessBrowser()
            return (app, browser, try browser.open(url))
        }

        static func residentMegabytes(_ pid: Int32) -> Int {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
        }

        @Test func anAppGoesLiveThroughThePickerAndSeesStateButNeverSamples() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let output = fixture.file("out")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            let (app, browser, page) = try Self.openPicker(fixture, appArguments: ["--go-live", "file", "--live-seconds", "3"])
            defer { browser.stop() }
            // preferredExtension narrows the picker to one service.
            #expect(try page.evaluate("document.querySelectorAll('input[name=extension]').length") as? Int == 1)
            #expect(try page.text().contains("secret-notes wants to go live"))
            _ = try page.evaluate("document.getElementById('setup-file-dir').value = \(String(reflecting: output.path))")
            try page.click("#start")
            try page.waitUntil("document.getElementById('result') !== null && document.getElementById('result').textContent === 'Live'")

            let result = app.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog)")
            let states = result.jsonLines.filter { $0["event"] as? String == "broadcast" }.compactMap { $0["state"] as? String }
            // Starting, live (again on each service-info update), paused, live, finished: in that order.
            let transitions = states.reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
            #expect(transitions == ["starting", "live", "paused", "live", "finished"], "\(states)")
            #expect(result.jsonLines.contains { ($0["url"] as? String)?.hasPrefix("file://") == true }, "\(result)")
            let lines = try String(contentsOf: output.appendingPathComponent("broadcast.jsonl"), encoding: .utf8)
            #expect(lines.contains("\"video\"") && lines.contains("\"finished\""))

            // The app may control only its own broadcast: a second app cannot stop the person's.
            let start = try fixture.replay(["broadcast", "start", "--extension", "file", "--setup", "dir=\(output.path)"])
            #expect(start.status == 0, "\(start)")
            let channel = try MessageChannel.connect(path: fixture.socket)
            try channel.send(ClientRequest.stopBroadcast(id: nil))
            guard case .error(.notPermitted, _)? = try channel.receive(DaemonEvent.self)?.message else {
                Issue.record("an app stopped a broadcast it did not start")
                return
            }
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
        }

        @Test func theHostAppHearsWhyItsBroadcastFailed() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let (app, browser, page) = try Self.openPicker(fixture, appArguments: ["--go-live", "hostile", "--live-seconds", "30"])
            defer { browser.stop() }
            _ = try page.evaluate("document.getElementById('setup-hostile-behaviour').value = 'allocate'")
            try page.click("#start")
            try page.waitUntil("document.getElementById('result') !== null")
            let result = app.finish(timeout: 60)
            let failed = result.jsonLines.last { $0["event"] as? String == "broadcast" }
            #expect(failed?["state"] as? String == "failed", "\(result)")
            let error = (failed?["error"] as? String) ?? ""
            #expect(error.contains("more than 50 MiB"), "\(result)")
        }

        @Test func anUnknownExtensionOrMissingSetupIsAClearError() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, audio: false, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.installExtensions(in: fixture))
            let unknown = try fixture.replay(["broadcast", "start", "--extension", "nope"])
            #expect(unknown.status != 0 && unknown.stderr.contains("no extension 'nope'") && unknown.stderr.contains("file"), "\(unknown)")
            let missing = try fixture.replay(["broadcast", "start", "--extension", "file"])
            #expect(missing.status != 0 && missing.stderr.contains("--setup dir="), "\(missing)")
            let stray = try fixture.replay(["broadcast", "start", "--extension", "file", "--setup", "dir=/tmp", "--setup", "colour=red"])
            #expect(stray.status != 0 && stray.stderr.contains("no setup field 'colour'"), "\(stray)")
        }
    }
}
