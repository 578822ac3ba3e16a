import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import Testing

extension IntegrationTests.ConsentDialog {
    /// Issue 47: the preview of a recording an app made (`preview.show()`), in replay-ui's window
    /// (no agent started: the session bus starts it). It plays; the person trims 10 s to 3–7 s
    /// on the keyboard, saves it through the file chooser, and deletes the recording; found
    /// through AT-SPI, typed and clicked with xdotool, looked at in a screenshot.
    @Test func theAppsPreviewTrimsItsRecordingSavesItAndDeletesIt() throws {
        let desktop = try Desktop(daemonArguments: IntegrationTests.Privacy.allowExampleApp(in:))
        defer { desktop.stop() }
        let app = try desktop.fixture.startApp(["--record", "10", "--no-protect", "--geometry", "600,400,300,200"])
        defer { app.process.terminate() }
        let tree = desktop.session.accessibility
        let recorded = app.waitForJSONLine(timeout: 60) { $0["event"] as? String == "recorded" }
        #expect(recorded != nil, "\(app.outputSoFar)\n\(desktop.fixture.daemonLog.suffix(1500))")
        #expect(app.waitForJSONLine(timeout: 30) { $0["event"] as? String == "previewShown" } != nil, "\(app.outputSoFar)")

        let frame = try #require(try tree.find("replay-ui", role: "frame", name: "Recording"),
                                 "no preview: \(desktop.session.log)\n\(desktop.fixture.daemonLog.suffix(1500))")
        #expect(try tree.find("replay-ui", role: "label", name: "secret-notes made this recording", timeout: 5) != nil)
        // Once the movie is copied out to play, it may be saved.
        let save = try #require(try tree.find("replay-ui", role: "push button", name: "Save…", sensitive: true, timeout: 30),
                                "the movie never loaded: \(desktop.session.log)")

        // The screenshot: the player shows the recording's first picture, the app's blue
        // window in the lower right of a black screen, where AT-SPI says the video is.
        let video = try #require(try tree.find("replay-ui", role: "*", name: "The recording", timeout: 5),
                                 "the player is not named for a screen reader")
        let shown = poll(timeout: 20, every: 0.5) { () -> DecodedFrame? in
            guard let shot = try? desktop.screenshot("preview.png") else { return nil }
            let blue = shot.fraction(x: video.x, y: video.y, width: video.width, height: video.height, step: 2, Self.isBlue)
            return blue > 0.01 && blue < 0.4 ? shot : nil
        }
        #expect(shown != nil, "the player never showed the recording's picture")
        let light = try desktop.screenshot("preview.png").fraction(x: frame.x + 4, y: frame.y + 4, width: frame.width - 8, height: 30) {
            $0.r > 200 && $0.g > 200 && $0.b > 200
        }
        #expect(light > 0.8, "the preview's top is not its light surface (\(light))")

        // Trimmed on the keyboard: each number typed into its field.
        for (name, value) in [("Trim start (seconds)", "3"), ("Trim end (seconds)", "7")] {
            let field = try #require(try tree.find("replay-ui", role: "spin button", name: name, timeout: 5), "no \(name)")
            // Into its text, at the left: the middle of a spin button is its − button.
            try desktop.xdotool(["mousemove", String(field.x + 12), String(field.center.y), "click", "1"])
            try desktop.xdotool(["key", "ctrl+a"])
            try desktop.xdotool(["type", "--delay", "30", value])
            try desktop.xdotool(["key", "Tab"])
        }
        let tenths = Int(((recorded?["duration"] as? Double ?? 10) * 10).rounded())
        #expect(try tree.find("replay-ui", role: "label", name: "Keeps 0:03.0 to 0:07.0 (4.0 s of \(tenths / 10).\(tenths % 10) s)", timeout: 5) != nil,
                "the window does not say what it keeps")
        let target = desktop.fixture.file("kept.mp4")
        try desktop.click(save)
        // GTK's file chooser (no portal on this bus): the name typed as a whole path, and Enter.
        // (GTK 4.8 names a dialog's button by the label inside it.)
        #expect(try tree.find("replay-ui", role: "label", name: "Save", timeout: 20) != nil, "no file chooser: \(desktop.session.log)")
        try desktop.xdotool(["key", "ctrl+a"])
        try desktop.xdotool(["type", "--delay", "20", target.path])
        try desktop.xdotool(["key", "Return"])
        let saved = poll(timeout: 60, every: 0.3) { FileManager.default.fileExists(atPath: target.path) ? true : nil }
        #expect(saved == true, "nothing saved: \(desktop.session.log)\n\(desktop.fixture.daemonLog.suffix(1500))")
        let duration = try #require(try MediaProbe(target).duration)
        #expect(abs(duration - 4) < 0.25, "the saved movie lasts \(duration) s, not about 4")
        let decode = try Command.run(Command.which("ffmpeg"), ["-v", "error", "-i", target.path, "-f", "null", "-"], timeout: 60)
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode)")
        #expect(desktop.fixture.storedMovies().count == 1, "the save touched the store")

        // Delete asks twice; then the recording is gone from the store, and the window with it.
        let delete = try #require(try tree.find("replay-ui", role: "push button", name: "Delete", sensitive: true))
        try desktop.click(delete)
        let again = try #require(try tree.find("replay-ui", role: "push button", name: "Delete for good", timeout: 5))
        #expect(desktop.fixture.storedMovies().count == 1, "deleted on the first press")
        try desktop.click(again)
        #expect(try tree.awaitGone("replay-ui", role: "frame", name: "Recording"), "the preview outlived its recording")
        #expect(desktop.fixture.storedMovies().isEmpty, "the recording is still in the store")
        #expect(FileManager.default.fileExists(atPath: target.path), "the saved copy went with the recording")
        #expect(poll(timeout: 15, every: 0.1) { desktop.dialogRunning ? nil : true } == true, "replay-ui outlived its last window")
    }
}
