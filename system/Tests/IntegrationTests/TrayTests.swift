import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// Issue 47: while the screen is recorded on sway, waybar's tray shows replayd's icon; a
    /// person's right click opens its menu and a click on Stop stops the recording (sway's own
    /// pointer, as a mouse gives it), looked at in screenshots.
    @Suite(.serialized) struct Tray {
        @Test func theTraysStopStopsARecordingOnSway() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(compositor: .sway, width: 1280, height: 720, audio: false))
            defer { fixture.stop() }
            let desktop = try #require(fixture.waylandDesktop)
            let tray = try WaybarTray(environment: desktop.environment)
            defer { tray.stop() }
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path])

            let recording = try fixture.startReplay(["record", "--duration", "120", "--no-app-audio", "--json"])
            defer { recording.process.terminate() }
            try tray.waitForItems(count: 1, timeout: 60)
            #expect(try tray.registeredItems().contains { $0.contains("org.kde.StatusNotifierItem-") })
            #expect(try tray.isItemDrawn(index: 0), "the icon is not drawn in the bar")
            let status = try fixture.replay(["status", "--json"])
            #expect(status.stdout.contains("\"tray\""), "\(status.stdout)")

            // The menu: what captures, Pause, Stop; Stop pressed with the pointer.
            let menu = try tray.rightClickTrayItem(index: 0)
            #expect(menu.itemCount == 3, "\(menu)")
            let shot = try tray.screenshot(to: fixture.file("tray-menu.png"))
            #expect(shot.fraction(x: menu.x, y: menu.y, width: menu.width, height: menu.height, step: 2) { $0.r > 200 && $0.g > 200 && $0.b > 200 } > 0.6,
                    "the menu is not on screen")
            try tray.clickMenuItem(at: 2, of: menu)
            let result = recording.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(2000))")
            #expect(fixture.daemonLog.contains("stopped from the tray"), "\(fixture.daemonLog.suffix(2000))")
            let movie = try #require(fixture.storedMovies().first)
            let duration = try #require(try MediaProbe(movie).duration)
            #expect(duration > 0.5 && duration < 60, "\(duration)")
            // Nothing captures: the icon leaves the tray.
            #expect(poll(timeout: 10, every: 0.2) { (try? tray.registeredItems().isEmpty) == true || (try? tray.isItemDrawn(index: 0)) == false ? true : nil } == true,
                    "the icon stayed after the recording ended")
        }
    }
}
