import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
    /// Issue 47: an app's request, with no consent agent started, opens the desktop's dialog
    /// (replay-ui, started by the session bus), which a person answers with the mouse or the
    /// keyboard; it is found through AT-SPI as a screen reader finds it, pressed with real
    /// input (xdotool, on Xvfb), and looked at in a screenshot.
    @Suite(.serialized) struct ConsentDialog {
        static let width = 1024, height = 768
        /// What Allow says once a click that was not the person's was refused.
        static let pressItYourself = "Press Allow with the mouse or the keyboard"

        /// The desktop (no scene: the dialog is what is on screen), its session bus, and replayd
        /// on that bus with no agent and no policy.
        struct Desktop {
            let fixture: ReplayFixture
            let session: DesktopSession
            var display: String { fixture.desktop?.environment["DISPLAY"] ?? "" }

            /// - Parameter daemonArguments: replayd's arguments, from the fixture (extensions installed in it, say).
            init(daemonArguments: (ReplayFixture) throws -> [String] = { _ in [] }) throws {
                fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: ConsentDialog.width, height: ConsentDialog.height, demoScene: false))
                do {
                    session = try DesktopSession(in: fixture.directory, environment: fixture.environment(), socket: fixture.socket)
                    try fixture.startDaemon(try daemonArguments(fixture), environment: ["DBUS_SESSION_BUS_ADDRESS": session.busAddress])
                } catch {
                    fixture.stop()
                    throw error
                }
            }

            func stop() {
                session.stop()
                fixture.stop()
            }

            /// Real input on the display, as the person's mouse and keyboard give it.
            func xdotool(_ arguments: [String]) throws {
                let result = try Command.run(Command.which("xdotool"), arguments, environment: ["DISPLAY": display], timeout: 10)
                #expect(result.status == 0, "xdotool \(arguments): \(result)")
            }

            func click(_ accessible: AccessibilityTree.Accessible) throws {
                try xdotool(["mousemove", String(accessible.center.x), String(accessible.center.y), "click", "1"])
            }

            /// The dialog's Allow, once it may be pressed (shown and focused for a moment).
            func armedAllow() throws -> AccessibilityTree.Accessible? {
                try session.accessibility.find("replay-ui", role: "push button", name: "Allow", sensitive: true)
            }

            var dialogRunning: Bool { !processes(running: DesktopSession.dialogs).isEmpty }

            func screenshot(_ name: String) throws -> DecodedFrame {
                try DecodedFrame(screenOf: display, width: ConsentDialog.width, height: ConsentDialog.height, png: fixture.file(name))
            }

            /// Where, on `shot`, the dialog's live picture draws the screen's rectangle `area`: the
            /// picture keeps the screen's shape, centred in its widget.
            static func drawn(_ area: (x: Int, y: Int, width: Int, height: Int), in picture: AccessibilityTree.Accessible)
                -> (x: Int, y: Int, width: Int, height: Int) {
                let scale = min(Double(picture.width) / Double(ConsentDialog.width), Double(picture.height) / Double(ConsentDialog.height))
                let left = Double(picture.x) + (Double(picture.width) - Double(ConsentDialog.width) * scale) / 2
                let top = Double(picture.y) + (Double(picture.height) - Double(ConsentDialog.height) * scale) / 2
                return (Int(left + Double(area.x) * scale), Int(top + Double(area.y) * scale),
                        Int(Double(area.width) * scale), Int(Double(area.height) * scale))
            }
        }

        static func isGreen(_ pixel: DecodedFrame.RGB) -> Bool { pixel.g > 180 && pixel.r < 80 && pixel.b < 80 }
        static func isBlue(_ pixel: DecodedFrame.RGB) -> Bool { pixel.b > 180 && pixel.r < 80 && pixel.g < 80 }

        @Test func anAppsRequestWithNoAgentShowsTheDialogAndAllowStartsItsRecording() throws {
            let desktop = try Desktop()
            defer { desktop.stop() }
            try AppNames.installEntry(in: desktop.fixture)
            let app = try desktop.fixture.startApp(["--record", "2", "--geometry", "600,400,300,200"])
            defer { app.process.terminate() }

            // What the person sees: the app by its desktop entry, the path beside it, what it would capture.
            let session = desktop.session
            let frame = try #require(try session.accessibility.find("replay-ui", role: "frame", name: "Allow screen recording?"),
                                     "no dialog: \(session.log)\n\(desktop.fixture.daemonLog.suffix(1500))")
            #expect(try session.accessibility.find("replay-ui", role: "label", name: "Secret Notes wants to record your screen", timeout: 5) != nil)
            #expect(try session.accessibility.find("replay-ui", role: "label", name: "Everything on your screen", timeout: 5) == nil,
                    "the list's bullet is part of each line")
            #expect(try session.accessibility.find("replay-ui", role: "label", name: "• Everything on your screen", timeout: 5) != nil)
            let allow = try #require(try desktop.armedAllow(), "Allow never became pressable")

            // The screenshot: the dialog's light surface where AT-SPI says it is, Allow drawn
            // as the suggested (blue) action, and the desktop's black around it. In the live
            // picture of what a recording would show, the app's window (which it protects) is
            // black, though blue on the screen, and the dialog itself is there, light.
            let picture = try #require(try session.accessibility.find("replay-ui", role: "image", name: "What it would record now:"))
            let window = (x: 600, y: 400, width: 300, height: 200)
            let inPicture = Desktop.drawn((window.x + 30, window.y + 100, window.width - 60, window.height - 110), in: picture)
            let dialogInPicture = Desktop.drawn((frame.x + 10, frame.y + 10, frame.width - 20, 30), in: picture)
            let shot = try #require(poll(timeout: 15, every: 0.3) { () -> DecodedFrame? in
                guard let shot = try? desktop.screenshot("consent-dialog.png") else { return nil }
                let light = shot.fraction(x: dialogInPicture.x, y: dialogInPicture.y, width: dialogInPicture.width,
                                          height: dialogInPicture.height, step: 2) { $0.r > 200 && $0.g > 200 && $0.b > 200 }
                return light > 0.6 ? shot : nil
            }, "the live picture never showed the screen")
            let light = shot.fraction(x: frame.x + 4, y: frame.y + 4, width: frame.width - 8, height: 40) { $0.r > 200 && $0.g > 200 && $0.b > 200 }
            #expect(light > 0.8, "the dialog's top is not its light surface (\(light))")
            let button = shot.pixel(x: allow.x - 4, y: allow.center.y)
            #expect(button.b > 180 && button.r < 120, "Allow is not drawn as the suggested action: \(button)")
            #expect(shot.fraction(x: window.x + 30, y: window.y + 100, width: window.width - 60, height: window.height - 110, Self.isBlue) > 0.95,
                    "the app's window is not on the screen")
            #expect(shot.blackFraction(x: inPicture.x, y: inPicture.y, width: inPicture.width, height: inPicture.height, step: 2) > 0.95,
                    "the protected window shows in the live picture")

            try desktop.click(allow)
            let recorded = app.waitForJSONLine(timeout: 30) { $0["event"] as? String == "recorded" }
            #expect(recorded != nil, "\(app.outputSoFar)\n\(desktop.fixture.daemonLog.suffix(1500))")
            #expect(desktop.fixture.daemonLog.contains("capture allowed"))
            let movie = try #require(desktop.fixture.storedMovies().first)
            let duration = try #require(try MediaProbe(movie).duration)
            #expect(duration > 1.5 && duration < 3, "\(duration)")
            // The app then shows the person its recording's preview, in a window of the same
            // program; once that is closed, nothing is shown, and the program goes.
            let close = try #require(try session.accessibility.find("replay-ui", role: "push button", name: "Close", sensitive: true, timeout: 30),
                                     "no preview after the recording: \(app.outputSoFar)")
            try desktop.click(close)
            #expect(poll(timeout: 15, every: 0.1) { desktop.dialogRunning ? nil : true } == true, "replay-ui outlived its last window")
        }

        /// An in-app capture's question shows, live, exactly what the app would receive: its
        /// own window (unprotected here, green) and black everywhere else, the dialog included.
        @Test func anInAppCapturesDialogShowsLiveWhatTheAppWouldSee() throws {
            let desktop = try Desktop()
            defer { desktop.stop() }
            let app = try desktop.fixture.startApp(["--share-frames", "5", "--no-protect", "--colour", "green",
                                                    "--geometry", "600,400,300,200"])
            defer { app.process.terminate() }
            let session = desktop.session
            _ = try #require(try session.accessibility.find("replay-ui", role: "frame", name: "Share an app's windows?"),
                             "no dialog: \(session.log)\n\(desktop.fixture.daemonLog.suffix(1500))")
            // Where the dialog and its picture are is asked again with each screenshot: the
            // dialog may still be settling its layout (its title wrapping) when first found.
            typealias Area = (x: Int, y: Int, width: Int, height: Int)
            let seen = try #require(poll(timeout: 15, every: 0.3) { () -> (shot: DecodedFrame, dialog: Area, elsewhere: Area)? in
                guard let frame = try? session.accessibility.find("replay-ui", role: "frame", name: "Share an app's windows?", timeout: 2),
                      let picture = try? session.accessibility.find("replay-ui", role: "image",
                                                                   name: "What it would see now (the rest stays black):", timeout: 2),
                      let shot = try? desktop.screenshot("consent-dialog-in-app.png") else { return nil }
                let window = Desktop.drawn((630, 500, 240, 90), in: picture)
                guard shot.fraction(x: window.x, y: window.y, width: window.width, height: window.height, step: 2, Self.isGreen) > 0.9 else { return nil }
                return (shot, Desktop.drawn((frame.x + 10, frame.y + 10, frame.width - 20, 30), in: picture), Desktop.drawn((0, 0, 560, 360), in: picture))
            }, "the live picture never showed the app's window: \(desktop.fixture.daemonLog.suffix(1500))")
            let (shot, dialog, elsewhere) = seen
            #expect(shot.blackFraction(x: elsewhere.x, y: elsewhere.y, width: elsewhere.width, height: elsewhere.height, step: 2) > 0.98,
                    "the live picture shows more than the app's window")
            #expect(shot.blackFraction(x: dialog.x, y: dialog.y, width: dialog.width, height: dialog.height, step: 2) > 0.98,
                    "the dialog itself shows in what the app would see")
            // The app gets no picture until the person allows; then its own.
            #expect(!app.outputSoFar.contains("\"shared\""))
            let allow = try #require(try desktop.armedAllow())
            try desktop.click(allow)
            let shared = app.waitForJSONLine(timeout: 30) { $0["event"] as? String == "shared" }
            #expect(shared?["frames"] as? Int == 5, "\(app.outputSoFar)\n\(desktop.fixture.daemonLog.suffix(1000))")
        }

        @Test func dontAllowAndEscapeDeclineTheRequest() throws {
            let desktop = try Desktop()
            defer { desktop.stop() }
            let first = try desktop.fixture.startApp(["--record", "2", "--geometry", "600,400,300,200"])
            defer { first.process.terminate() }
            // On screen and focused (Allow armed), as the person sees it, before anything is pressed.
            _ = try #require(try desktop.armedAllow(), "no dialog: \(desktop.session.log)")
            let decline = try #require(try desktop.session.accessibility.find("replay-ui", role: "push button", name: "Don't Allow"))
            try desktop.click(decline)
            let refused = first.waitForJSONLine(timeout: 20) { $0["event"] as? String == "error" }
            #expect(refused?["code"] as? String == "userDeclined")
            #expect((refused?["message"] as? String)?.contains("the person declined") == true, "\(String(describing: refused))")

            // The keyboard: Escape is Don't Allow.
            let second = try desktop.fixture.startApp(["--record", "2", "--geometry", "600,400,300,200"])
            defer { second.process.terminate() }
            #expect(try desktop.armedAllow() != nil, "no second dialog")
            try desktop.xdotool(["key", "Escape"])
            let escaped = second.waitForJSONLine(timeout: 20) { $0["event"] as? String == "error" }
            #expect((escaped?["message"] as? String)?.contains("the person declined") == true, "\(String(describing: escaped))")
            #expect(desktop.fixture.storedMovies().isEmpty)
        }

        /// The attack: an app (any client of the accessibility bus) performs Allow's "click"
        /// through AT-SPI. GTK emits the button's clicked, but no input of the person's came with
        /// it: nothing is allowed. The person's own click on Don't Allow then decides.
        @Test func anAppPressingAllowThroughAccessibilityIsRefused() throws {
            let desktop = try Desktop()
            defer { desktop.stop() }
            let app = try desktop.fixture.startApp(["--record", "2", "--geometry", "600,400,300,200"])
            defer { app.process.terminate() }
            _ = try #require(try desktop.armedAllow(), "no dialog: \(desktop.session.log)")
            for _ in 0..<3 {
                let pressed = try desktop.session.accessibility.doAction("replay-ui", role: "push button", name: "Allow")
                #expect(pressed.status == 0 && pressed.stdout.contains("\"done\": true"), "the action was not performed: \(pressed)")
            }
            // GTK clicks a button pressed that way a moment later (its pressed look first); the
            // dialog refuses the click and says so on the button, for a screen reader too.
            let refusedClick = try desktop.session.accessibility.find("replay-ui", role: "push button", name: "Allow",
                                                        description: ConsentDialog.pressItYourself)
            #expect(refusedClick != nil, "the dialog did not refuse the accessibility click")
            // The person's own answer, given after, shows what stood: allowed, the dialog would
            // be gone and the app recording; it is still asking, and the person declines.
            let decline = try #require(try desktop.session.accessibility.find("replay-ui", role: "push button", name: "Don't Allow"),
                                       "the dialog went: an accessibility action answered it")
            try desktop.click(decline)
            let refused = app.waitForJSONLine(timeout: 20) { $0["event"] as? String == "error" }
            #expect((refused?["message"] as? String)?.contains("the person declined") == true, "\(String(describing: refused))")
            #expect(!desktop.fixture.daemonLog.contains("capture allowed"))
            #expect(desktop.fixture.storedMovies().isEmpty)
        }

        /// A dialog whose app has gone closes itself, and the program with it.
        @Test func theDialogOfAnAppThatWentClosesItself() throws {
            let desktop = try Desktop()
            defer { desktop.stop() }
            let app = try desktop.fixture.startApp(["--record", "2", "--geometry", "600,400,300,200"])
            _ = try #require(try desktop.session.accessibility.find("replay-ui", role: "frame", name: "Allow screen recording?"), "no dialog")
            app.process.terminate()
            #expect(try desktop.session.accessibility.awaitGone("replay-ui", role: "frame", name: "Allow screen recording?"))
            #expect(poll(timeout: 15, every: 0.1) { desktop.dialogRunning ? nil : true } == true, "replay-ui outlived its last dialog")
        }

        /// Another program on the session bus names a socket of its own: the dialog never
        /// connects there (a daemon of the program's could otherwise ask the person in our window).
        @Test func anotherProgramCannotPointTheDialogAtADaemonOfItsOwn() throws {
            let desktop = try Desktop()
            defer { desktop.stop() }
            let decoy = desktop.fixture.file("decoy.sock")
            let listener = try UnixSocket.listen(path: decoy.path)
            defer { close(listener) }
            let call = try Command.run(Command.which("gdbus"), [
                "call", "--session", "--dest", "org.openreplaykit.UI", "--object-path", "/org/openreplaykit/UI",
                "--method", "org.freedesktop.Application.Open", "['\(decoy.absoluteString)']", "{}",
            ], environment: ["DBUS_SESSION_BUS_ADDRESS": desktop.session.busAddress], timeout: 30)
            #expect(call.status == 0, "\(call)")
            #expect(poll(timeout: 10, every: 0.1) { desktop.session.log.contains("not answering for \(decoy.path)") ? true : nil } == true,
                    "\(desktop.session.log)")
            var address = sockaddr_un()
            var length = socklen_t(MemoryLayout<sockaddr_un>.size)
            let flags = fcntl(listener, F_GETFL)
            _ = fcntl(listener, F_SETFL, flags | O_NONBLOCK)
            let accepted = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &length) }
            }
            #expect(accepted < 0 && errno == EAGAIN, "replay-ui connected to the decoy")
            if accepted >= 0 { close(accepted) }
        }
    
        /// On Wayland (sway), where input comes through the compositor: the same dialog, found
        /// through AT-SPI, answered on the keyboard sway delivers (Tab to Allow, Space). The
        /// portal says nothing of where windows are, so the dialog says it has no live picture.
        @Test func onSwayTheDialogIsAnsweredWithTheKeyboardSwayDelivers() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(compositor: .sway, width: 1024, height: 768, audio: false, scene: nil),
                                            dialogs: true)
            defer { fixture.stop() }
            let desktop = try #require(fixture.waylandDesktop)
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path])
            let tree = AccessibilityTree(busAddress: desktop.busAddress)
            // A person's seat has a keyboard; headless sway's gets one here, and the window its focus.
            let keyboard = try desktop.attachKeyboard()
            defer { keyboard.detach() }
            // The app: this test's process, asking as any app would.
            let app = try MessageChannel.connect(path: fixture.socket, client: "test-app")
            defer { app.close() }
            try app.send(ClientRequest.startRecording(options: RecordingOptions(duration: 1, appAudio: false)))

            let title = "Allow screen recording?"
            _ = try #require(try tree.find("replay-ui", role: "frame", name: title), "no dialog: \(desktop.busLog.suffix(2000))\n\(fixture.daemonLog.suffix(1000))")
            #expect(try tree.find("replay-ui", role: "label", name: "No live preview: no preview through the desktop's ScreenCast portal") != nil)
            _ = try #require(try tree.find("replay-ui", role: "push button", name: "Allow", sensitive: true), "Allow never became pressable")
            // Don't Allow has the focus first: Tab moves it to Allow, Space presses it.
            try keyboard.typeAndDetach("\t ")
            var events: [DaemonEvent] = []
            while let (event, _) = try app.receive(DaemonEvent.self) {
                events.append(event)
                if case .recordingStarted = event { break }
                if case .error = event { break }
            }
            #expect(events.contains { if case .recordingStarted = $0 { true } else { false } },
                    "\(events)\n\(desktop.busLog.suffix(1500))\n\(fixture.daemonLog.suffix(1500))")
            #expect(fixture.daemonLog.contains("capture allowed"))
        }
    }
}
