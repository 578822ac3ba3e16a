import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// `replay record --window pick` on Wayland: the desktop's dialog offers windows, and the
    /// screen cast follows the one chosen. On GNOME Shell: xdg-desktop-portal-gnome lists windows
    /// through the shell (mutter alone has no window list; sway's portal shares monitors only).
    @Suite struct WaylandWindowCapture {
        static let red = (red: 220, green: 40, blue: 40)
        static let green = (red: 40, green: 200, blue: 40)

        /// The parts of the picture 1.5 s into `movie` that are the red and the green window's colour.
        static func colours(_ movie: URL) throws -> (red: Double, green: Double) {
            let video = try #require(try MediaProbe(movie).video)
            let width = try #require(video.width), height = try #require(video.height)
            let frame = try DecodedFrame(movie, at: 1.5, width: width, height: height)
            let red = frame.fraction(x: 0, y: 0, width: width, height: height, step: 4) { $0.r > 180 && $0.g < 80 && $0.b < 80 }
            let green = frame.fraction(x: 0, y: 0, width: width, height: height, step: 4) { $0.g > 160 && $0.r < 80 && $0.b < 80 }
            return (red, green)
        }

        @Test func aWindowChosenInTheDesktopsDialogIsRecordedAloneAndItsChoiceIsKeptApartFromTheScreens() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(compositor: .gnomeShell, width: 640, height: 480, audio: false,
                                                                           scene: nil))
            defer { fixture.stop() }
            let desktop = try #require(fixture.waylandDesktop)
            try desktop.showWindow(title: "Red test window", colour: Self.red, width: 320, height: 240)
            try desktop.showWindow(title: "Green test window", colour: Self.green, width: 320, height: 240)
            // As if the person had chosen the red window in GNOME's dialog before.
            let windowTokenFile = URL(fileURLWithPath: fixture.portalTokenFile.path + "-window")
            try (try desktop.seedWindowToken(title: "Red test window") + "\n").write(to: windowTokenFile, atomically: true, encoding: .utf8)
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path, "--screen-choice-timeout", "8"])

            let movie = fixture.file("window.mp4")
            let result = try fixture.replay(["record", "--window", "pick", "--duration", "3", "--no-app-audio", "--output", movie.path],
                                            timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(2000))")
            #expect(!result.stderr.contains("Click the window") && !result.stderr.contains("asking"), "no click, no dialog: \(result)")
            let (red, green) = try Self.colours(movie)
            print("window cast: red \(Int(red * 100))%, green \(Int(green * 100))%")
            // The red window's 320x240 inside (its title bar aside) is a fair part of the picture;
            // the green one, open beside or over it, is nowhere.
            #expect(red > 0.15, "the chosen window is not in the picture")
            #expect(green == 0, "another window shows in a window's cast")

            // The screen's choice is kept apart (the desktop seeded one for the monitor): the
            // screen shows both windows.
            let screenMovie = fixture.file("screen.mp4")
            let screen = try fixture.replay(["record", "--duration", "2", "--no-app-audio", "--output", screenMovie.path], timeout: 60)
            #expect(screen.status == 0, "\(screen)")
            let (redOnScreen, greenOnScreen) = try Self.colours(screenMovie)
            print("screen cast: red \(Int(redOnScreen * 100))%, green \(Int(greenOnScreen * 100))%")
            #expect(greenOnScreen > 0.05 && redOnScreen > 0, "the screen's recording is not of the screen")

            // `--forget` forgets the window's choice too: the desktop asks again, and nobody answers here.
            #expect(try fixture.replay(["sources", "--forget"]).status == 0)
            #expect(!FileManager.default.fileExists(atPath: windowTokenFile.path), "the window's choice is still on disk")
            let asked = try fixture.replay(["record", "--window", "pick", "--duration", "1", "--no-app-audio"], timeout: 60)
            #expect(asked.status != 0, "\(asked)")
            #expect(asked.stderr.contains("The desktop is asking which window to share") && asked.stderr.contains("nobody answered"),
                    "\(asked)")
        }
    }
}
