import Foundation
import ReplayTesting
import ReplayVirtualDesktop
import Testing

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

        @Test func withoutANotificationServerCaptureGoesOnAndTheLogSaysWhy() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let result = try fixture.replay(["record", "--duration", "1"])
            #expect(result.status == 0, "\(result)")
            #expect(fixture.daemonLog.contains("no desktop notifications: captures are not announced"))
        }
    }
}
