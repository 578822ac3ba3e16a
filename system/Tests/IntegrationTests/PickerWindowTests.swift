import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import Testing

extension IntegrationTests.ConsentDialog {
    /// Issue 47: the broadcast picker an app opens, in replay-ui's window (no agent started:
    /// the session bus starts it). The person types a setting, presses Start with the mouse,
    /// sees it live, and stops it; found through AT-SPI, pressed with xdotool, looked at.
    @Test func theAppsPickerStartsAFileBroadcastWithASettingTypedInAndStopsIt() throws {
        let desktop = try Desktop(daemonArguments: IntegrationTests.Broadcast.installExtensions(in:))
        defer { desktop.stop() }
        let output = desktop.fixture.file("picked")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        let app = try desktop.fixture.startApp(["--no-protect", "--geometry", "600,400,300,200", "--go-live", "file", "--live-seconds", "120"])
        defer { app.process.terminate() }

        let tree = desktop.session.accessibility
        let frame = try #require(try tree.find("replay-ui", role: "frame", name: "Go live"),
                                 "no picker: \(desktop.session.log)\n\(app.outputSoFar)\n\(desktop.fixture.daemonLog.suffix(1500))")
        #expect(try tree.find("replay-ui", role: "label", name: "secret-notes wants to go live with your screen", timeout: 5) != nil)
        // The app named one service: it is the only one shown, chosen, with nothing to toggle.
        #expect(try tree.find("replay-ui", role: "label", name: "Broadcast with Write to a file.", timeout: 5) != nil)
        #expect(try tree.find("replay-ui", role: "check box", name: "Write to a file", timeout: 1) == nil)
        #expect(try tree.find("replay-ui", role: "label", name: "Broadcast with Misbehaves.", timeout: 1) == nil)
        // What the service is and its icon, as its manifest says.
        #expect(try tree.find("replay-ui", role: "label", name: "Writes what it receives into a file.", timeout: 5) != nil)
        #expect(try tree.find("replay-ui", role: "*", name: "Icon of Write to a file", timeout: 1) != nil)

        // Start with the setting empty: the window says what is missing, and nothing starts.
        let start = try #require(try tree.find("replay-ui", role: "push button", name: "Start", sensitive: true), "Start never became pressable")
        try desktop.click(start)
        #expect(try tree.find("replay-ui", role: "label", name: "Directory is needed", timeout: 10) != nil)

        let directory = try #require(try tree.find("replay-ui", role: "text", name: "Directory"))
        try desktop.click(directory)
        try desktop.xdotool(["type", "--delay", "20", output.path])
        try desktop.click(start)
        let live = app.waitForJSONLine(timeout: 30) { $0["event"] as? String == "broadcast" && $0["state"] as? String == "live" }
        #expect(live != nil, "\(app.outputSoFar)\n\(desktop.fixture.daemonLog.suffix(2000))")
        let stop = try #require(try tree.find("replay-ui", role: "push button", name: "Stop", sensitive: true), "no Stop once live")

        // The screenshot: the picker's light surface where AT-SPI says it is, and Stop drawn
        // as the destructive (red) action.
        let shot = try desktop.screenshot("picker.png")
        let light = shot.fraction(x: frame.x + 4, y: frame.y + 4, width: frame.width - 8, height: 40) { $0.r > 200 && $0.g > 200 && $0.b > 200 }
        #expect(light > 0.8, "the picker's top is not its light surface (\(light))")
        // GTK 4.8 gives a button's extents as its label's: the button's own surface is just left of them.
        let button = shot.pixel(x: stop.x - 8, y: stop.center.y)
        #expect(button.r > 170 && button.g < 90 && button.b < 90, "Stop is not drawn as the destructive action: \(button)")

        try desktop.click(stop)
        let finished = app.waitForJSONLine(timeout: 30) { $0["event"] as? String == "broadcast" && $0["state"] as? String == "finished" }
        #expect(finished != nil, "\(app.outputSoFar)\n\(desktop.fixture.daemonLog.suffix(2000))")
        let written = try String(contentsOf: output.appendingPathComponent("broadcast.jsonl"), encoding: .utf8)
        #expect(written.contains("\"video\"") && written.contains("\"finished\""), "\(written.suffix(500))")

        // The app has gone: its picker goes, and with nothing shown, the program.
        #expect(app.finish(timeout: 30).status == 0)
        #expect(try tree.awaitGone("replay-ui", role: "frame", name: "Go live"), "the picker outlived its app")
        #expect(poll(timeout: 15, every: 0.1) { desktop.dialogRunning ? nil : true } == true, "replay-ui outlived its last window")
    }

    /// Start, like Allow, is not pressed by an accessibility call: an app cannot go live for the person.
    @Test func anAppCannotPressStartThroughAccessibility() throws {
        let desktop = try Desktop(daemonArguments: IntegrationTests.Broadcast.installExtensions(in:))
        defer { desktop.stop() }
        let output = desktop.fixture.file("picked")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        let app = try desktop.fixture.startApp(["--no-protect", "--go-live", "file", "--live-seconds", "120"])
        defer { app.process.terminate() }
        let tree = desktop.session.accessibility
        let directory = try #require(try tree.find("replay-ui", role: "text", name: "Directory"), "no picker: \(desktop.session.log)")
        try desktop.click(directory)
        try desktop.xdotool(["type", "--delay", "20", output.path])
        #expect(try tree.find("replay-ui", role: "push button", name: "Start", sensitive: true) != nil)
        for _ in 0..<3 { _ = try tree.doAction("replay-ui", role: "push button", name: "Start") }
        #expect(try tree.find("replay-ui", role: "push button", name: "Start", description: "Press Start with the mouse or the keyboard", timeout: 10) != nil)
        #expect(app.waitForJSONLine(timeout: 3) { $0["event"] as? String == "broadcast" } == nil, "an accessibility call went live")
        #expect(try IntegrationTests.Broadcast.status(desktop.fixture).isEmpty)
    }
}
