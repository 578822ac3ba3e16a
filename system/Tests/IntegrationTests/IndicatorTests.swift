import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
    /// The person is told when the screen is captured, by whom, and can stop it there: desktop
    /// notifications, shown by a real notification server (dunst) on the test's display.
    @Suite struct Indicator {
        @Test func aRecordingIsAnnouncedItsStopActionStopsItAndItsEndIsAnnounced() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let server = try NotificationServer(display: try #require(fixture.desktop?.environment["DISPLAY"]))
            defer { server.stop() }
            let bus = ["DBUS_SESSION_BUS_ADDRESS": server.busAddress]
            try fixture.startDaemon(environment: bus)

            let started = Date()
            let recording = try fixture.startReplay(["record", "--duration", "60", "--json"])
            let shown = poll(timeout: 20, every: 0.1) { server.shown.first }
            let announced = try #require(shown, "no notification while recording\n\(fixture.daemonLog.suffix(1500))")
            #expect(announced.summary == "Recording the screen")
            #expect(announced.body == "The replay command is recording your screen.")
            #expect(try server.displayed() == 1)

            // A click (its default action; GNOME also shows a Stop button) stops the recording, which is kept.
            #expect(try server.invokeAction().status == 0)
            let result = recording.finish(timeout: 20)
            #expect(result.status == 0, "\(result)")
            #expect(Date().timeIntervalSince(started) < 30, "the Stop action did not stop the recording")
            #expect(fixture.daemonLog.contains("stopped from the desktop's notification"))
            #expect(fixture.storedMovies().count == 1)
            let ended = poll(timeout: 10, every: 0.1) { server.shown.count >= 2 ? server.shown : nil }
            #expect(ended?.last?.summary == "Screen recording ended", "\(server.shown)")
            #expect(poll(timeout: 5, every: 0.1) { try? server.displayed() == 1 ? true : nil } != nil,
                    "the capture's own notification should be gone, only the end shown")

            // A script may record unannounced; nothing more is shown.
            let before = server.shown.count
            let quiet = try fixture.replay(["record", "--duration", "1", "--no-notify"])
            #expect(quiet.status == 0, "\(quiet)")
            Thread.sleep(forTimeInterval: 0.5)
            #expect(server.shown.count == before, "\(server.shown)")
        }

        @Test func aBroadcastIsAnnouncedNamingTheService() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            let server = try NotificationServer(display: try #require(fixture.desktop?.environment["DISPLAY"]))
            defer { server.stop() }
            try fixture.startDaemon(Broadcast.installExtensions(in: fixture), environment: ["DBUS_SESSION_BUS_ADDRESS": server.busAddress])
            let output = fixture.file("out")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            let start = try fixture.replay(["broadcast", "start", "--extension", "file", "--setup", "dir=\(output.path)"])
            #expect(start.status == 0, "\(start)")
            let shown = poll(timeout: 10, every: 0.1) { server.shown.first }
            #expect(shown?.summary == "Broadcasting the screen")
            #expect(shown?.body == "The replay command is broadcasting your screen to Write to a file.", "\(String(describing: shown))")
            // Stop from the notification ends the broadcast.
            #expect(try server.invokeAction().status == 0)
            let final = try Broadcast.waitUntilOver(fixture)
            #expect(final?["state"] as? String == "finished", "\(final ?? [:])")
            let ended = poll(timeout: 10, every: 0.1) { server.shown.count >= 2 ? server.shown.last : nil }
            #expect(ended?.summary == "Broadcast ended")
        }

        /// A pause shows in `replay status` and in the recording's notification, replaced in
        /// place, whoever paused it: `replay pause`, or the notification's own Pause and Resume.
        @Test func aPauseShowsInStatusAndTheNotificationWhosePauseAndResumeWork() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            let server = try NotificationServer(display: try #require(fixture.desktop?.environment["DISPLAY"]))
            defer { server.stop() }
            try fixture.startDaemon(environment: ["DBUS_SESSION_BUS_ADDRESS": server.busAddress])

            let recording = try fixture.startReplay(["record", "--duration", "120", "--json"])
            defer { recording.process.terminate() }
            let announced = try #require(poll(timeout: 20, every: 0.1) { server.shown.first },
                                         "no notification while recording\n\(fixture.daemonLog.suffix(1500))")
            #expect(announced.summary == "Recording the screen")
            let status = try Self.status(fixture)
            let id = try #require((status["activeRecordings"] as? [String])?.first, "\(status)")
            #expect(status["pausedRecordings"] as? [String] == [], "\(status)")
            #expect((status["indicator"] as? [String: Any])?["kind"] as? String == "notifications", "\(status)")

            // Paused from the command line: status and the same notification say so, offering Resume.
            let paused = try fixture.replay(["pause"])
            #expect(paused.status == 0, "\(paused)")
            let pausedShown = poll(timeout: 10, every: 0.1) { server.shown.last.flatMap { $0.summary == "Recording paused" ? $0 : nil } }
            #expect(pausedShown?.id == announced.id, "not replaced in place: \(server.shown)")
            #expect(pausedShown?.body.contains("paused recording your screen") == true, "\(server.shown)")
            #expect(try server.displayed() == 1)
            #expect(try Self.status(fixture)["pausedRecordings"] as? [String] == [id])
            let text = try fixture.replay(["status"])
            #expect(text.stdout.contains("paused: \(id)"), "\(text)")

            // Resume from the notification: recording again, and the notification offers Pause.
            let resume = try server.invokeAction(named: "Resume", of: "Recording paused")
            #expect(resume?.hasSuffix(",resume]") == true, "\(String(describing: resume))")
            #expect(poll(timeout: 10, every: 0.1) { try? Self.status(fixture)["pausedRecordings"] as? [String] == [] ? true : nil } != nil,
                    "the notification's Resume did not resume\n\(fixture.daemonLog.suffix(1500))")
            #expect(poll(timeout: 10, every: 0.1) { server.shown.last?.summary == "Recording the screen" ? true : nil } != nil,
                    "\(server.shown)")
            let running = try fixture.replay(["status"])
            #expect(running.stdout.contains("recording: \(id)") && !running.stdout.contains("paused:"), "\(running)")

            // Pause from the notification.
            let pause = try server.invokeAction(named: "Pause", of: "Recording the screen")
            #expect(pause?.hasSuffix(",pause]") == true, "\(String(describing: pause))")
            #expect(poll(timeout: 10, every: 0.1) { try? Self.status(fixture)["pausedRecordings"] as? [String] == [id] ? true : nil } != nil,
                    "the notification's Pause did not pause\n\(fixture.daemonLog.suffix(1500))")
            #expect(poll(timeout: 10, every: 0.1) { server.shown.last?.summary == "Recording paused" ? true : nil } != nil,
                    "\(server.shown)")
            #expect(fixture.daemonLog.contains("paused from the desktop's notification"))
            #expect(Set(server.shown.map(\.id)) == [announced.id], "a notification was stacked: \(server.shown)")

            // Stop works while paused; the recording is kept.
            #expect(try server.invokeAction(named: "Stop", of: "Recording paused") != nil)
            let result = recording.finish(timeout: 20)
            #expect(result.status == 0, "\(result)")
            #expect(fixture.storedMovies().count == 1)
        }

        /// A clip saved by the hotkey has no window to answer in: a notification says what was
        /// saved, `replay clip status` lists it, and the notification's action opens its preview.
        @Test func aClipSavedByTheHotkeyIsAnnouncedListedAndOpensItsPreview() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let server = try NotificationServer(display: try #require(fixture.desktop?.environment["DISPLAY"]))
            defer { server.stop() }
            // The "browser" keeps the page it is given: replayd hands it a redirect file.
            let browser = fixture.file("browser.sh")
            let opened = fixture.file("opened.html")
            try "#!/bin/sh\ncp \"$1\" '\(opened.path).tmp' && mv '\(opened.path).tmp' '\(opened.path)'\n"
                .write(to: browser, atomically: true, encoding: .utf8)
            chmod(browser.path, 0o755)
            try fixture.startDaemon(environment: ["DBUS_SESSION_BUS_ADDRESS": server.busAddress, "BROWSER": browser.path])
            let started = try fixture.replay(["clip", "start", "--length", "10", "--hotkey", "Ctrl+Alt+S"])
            #expect(started.status == 0, "\(started)\n\(fixture.daemonLog.suffix(2000))")
            defer { _ = try? fixture.replay(["clip", "stop"]) }
            Thread.sleep(forTimeInterval: 3)
            let pressed = try fixture.run(Command.which("xdotool"), ["key", "ctrl+alt+s"])
            #expect(pressed.status == 0, "\(pressed)")

            let saved = try #require(poll(timeout: 15, every: 0.1) { server.shown.first { $0.summary.hasPrefix("Saved the last ") } },
                                     "no notification of the save: \(server.shown)\n\(fixture.daemonLog.suffix(2000))")
            // Its action (at once: the notice goes after 10 s) opens the clip's preview page, a fresh link the pages answer.
            let chosen = try server.invokeAction(named: "Open preview", of: saved.summary)
            #expect(chosen?.hasSuffix(",open]") == true, "\(String(describing: chosen))")
            let movie = try #require(fixture.storedMovies().first)
            let id = movie.deletingPathExtension().lastPathComponent
            #expect(saved.body.contains(id), "\(saved)")
            let page = try #require(poll(timeout: 10, every: 0.1) { try? String(contentsOf: opened, encoding: .utf8) },
                                    "the browser was not run\n\(fixture.daemonLog.suffix(2000))")
            let pages = try #require(try Self.status(fixture)["pagesURL"] as? String)
            let link = try #require(page.components(separatedBy: "url=").dropFirst().first?.components(separatedBy: "\"").first)
                .replacingOccurrences(of: "&amp;", with: "&")
            #expect(link.hasPrefix("\(pages)/preview/\(id)?token="), "\(link)")
            let fetched = try Command.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", link], timeout: 20)
            #expect(fetched.stdout == "200", "\(fetched)")

            // It says the clip's real length, to the second (about 3 s buffered, not the 10 s kept at most).
            let duration = try #require(try MediaProbe(movie).duration)
            let said = try #require(Int(saved.summary.dropFirst("Saved the last ".count).prefix { $0.isNumber }), "\(saved)")
            print("hotkey clip: \(saved.summary) for a movie of \(duration) s")
            #expect(abs(Double(said) - duration) <= 0.6, "\(saved) for a clip of \(duration) s")

            // Listed by `replay clip status`, as the hotkey's.
            let text = try fixture.replay(["clip", "status"])
            #expect(text.stdout.contains("saved \(id)") && text.stdout.contains("by the hotkey"), "\(text)")
            let json = try fixture.replay(["clip", "status", "--json"])
            let saves = try #require(json.jsonLines.first?["saves"] as? [[String: Any]], "\(json)")
            #expect(saves.count == 1 && saves.first?["id"] as? String == id && saves.first?["trigger"] as? String == "hotkey", "\(json)")
        }

        @Test func withoutANotificationServerCaptureGoesOnAndEveryoneSaysNobodyIsTold() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let result = try fixture.replay(["record", "--duration", "1"])
            #expect(result.status == 0, "\(result)")
            // A warning now, not a notice: capture goes on unseen.
            #expect(fixture.daemonLog.split(separator: "\n").contains { $0.contains("warning") && $0.contains("no desktop notifications: captures are not announced") },
                    "\(fixture.daemonLog.suffix(1500))")
            // Said once, as a warning, when the recording starts.
            #expect(result.stderr.components(separatedBy: "warning: nobody is told that capture is on").count - 1 == 1, "\(result)")
            // Not to a script that asked for no notification.
            let quiet = try fixture.replay(["record", "--duration", "1", "--no-notify"])
            #expect(quiet.status == 0 && !quiet.stderr.contains("nobody is told"), "\(quiet)")

            let text = try fixture.replay(["status"])
            #expect(text.stdout.contains("nobody is told that capture is on"), "\(text)")
            let indicator = try Self.status(fixture)["indicator"] as? [String: Any]
            #expect(indicator?["kind"] as? String == "none", "\(String(describing: indicator))")
            #expect((indicator?["reason"] as? String)?.contains("no desktop notification server") == true, "\(String(describing: indicator))")
        }

        /// `replay status --json`, as an object.
        static func status(_ fixture: ReplayFixture) throws -> [String: Any] {
            let result = try fixture.replay(["status", "--json"])
            return try #require(result.jsonLines.first, "\(result)")
        }
    }
}
