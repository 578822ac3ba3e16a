import Foundation
import ReplaySystem
import ReplayTesting
import Testing

extension IntegrationTests {
    /// X11 lets any client reparent any window into its own. An app's in-app capture shows its
    /// own windows only, so ownership is per window and per client, not per subtree.
    @Suite struct WindowAttacks {
        @Test func anotherClientsWindowReparentedIntoTheAppsIsBlackInItsCapture() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon(Privacy.allowExampleApp(in: fixture))
            // Another client's window, green.
            let other = try fixture.startApp(["--colour", "green", "--geometry", "1200,100,300,200", "--no-protect", "--stay", "60"])
            defer { other.process.terminate() }
            let otherWindow = try #require(other.waitForJSONLine { $0["event"] as? String == "window" }?["id"] as? Int, "\(other.outputSoFar)")

            // The app, blue, shares its own windows for four seconds.
            let app = try fixture.startApp(["--colour", "blue", "--geometry", "100,100,400,300", "--no-protect",
                                            "--share-frames", "40", "--share-fps", "10"])
            let appWindow = try #require(app.waitForJSONLine { $0["event"] as? String == "window" }?["id"] as? Int, "\(app.outputSoFar)")
            // The attack: the green window moved inside the app's own (what the app itself can do).
            let reparent = try Command.run(Command.which("xdotool"), ["windowreparent", "\(otherWindow)", "\(appWindow)"],
                                           environment: fixture.environment())
            #expect(reparent.status == 0, "\(reparent)")
            let inside = try Command.run(Command.which("xdotool"), ["getwindowgeometry", "\(otherWindow)"], environment: fixture.environment())
            #expect(inside.stdout.contains("Position: 100,100"), "the green window is not inside the app's: \(inside)")

            let result = app.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(1500))")
            let shared = try #require(result.jsonLines.first { $0["event"] as? String == "shared" }, "\(result)")
            let colours = try #require(shared["colours"] as? [String: Int])
            #expect(colours["green"] == 0, "another client's window leaked into the app's capture: \(colours)")
            #expect((colours["blue"] ?? 0) > 0, "\(colours)")
        }
    }
}
