import Foundation
import ReplayCapture
import ReplayMedia
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// Capture through the ScreenCast portal on a wlroots desktop: sway 1.7 headless (pixman
    /// renderer) with xdg-desktop-portal-wlr 0.7.0, patched for shared memory by
    /// scripts/build-xdpw. Where sway behaves as GNOME does, the GNOME tests run here too
    /// (they take the compositor as an argument); these are what differs.
    @Suite struct SwayCapture {
        static let background: UInt32 = 0x2060E0

        /// xdg-desktop-portal-wlr asks its chooser (sway's stand-in for GNOME's dialog; the
        /// desktop's answers for a person) on the first recording, and never again while
        /// replayd holds the restore token it returned; `replay sources --forget` makes it ask.
        @Test func theChooserIsAskedOnceAndTheKeptTokenSkipsIt() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(
                compositor: .sway, width: 640, height: 480, audio: false, scene: WaylandDesktop.Scene(background: Self.background)))
            defer { fixture.stop() }
            let desktop = try #require(fixture.waylandDesktop)
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path])
            #expect(desktop.dialogsShown == 0)

            let first = try fixture.replay(["record", "--duration", "1", "--no-app-audio", "--json"], timeout: 60)
            #expect(first.status == 0, "\(first)\n\(fixture.daemonLog.suffix(2000))")
            #expect(desktop.dialogsShown == 1, "the chooser was asked \(desktop.dialogsShown) times")
            let token = try String(contentsOf: fixture.portalTokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(!token.isEmpty, "the daemon kept no token from xdg-desktop-portal-wlr")

            for _ in 0..<2 {
                let again = try fixture.replay(["record", "--duration", "1", "--no-app-audio", "--json"], timeout: 60)
                #expect(again.status == 0, "\(again)\n\(fixture.daemonLog.suffix(2000))")
            }
            #expect(desktop.dialogsShown == 1, "with the kept token the chooser was still asked: \(desktop.dialogsShown) times")

            #expect(try fixture.replay(["sources", "--forget"]).status == 0)
            let forgotten = try fixture.replay(["record", "--duration", "1", "--no-app-audio", "--json"], timeout: 60)
            #expect(forgotten.status == 0, "\(forgotten)")
            #expect(desktop.dialogsShown == 2, "after --forget the chooser was asked \(desktop.dialogsShown) times in all")

            // xdg-desktop-portal-wlr shares monitors only: a window pick is refused, saying so.
            let window = try fixture.replay(["record", "--window", "pick", "--duration", "1", "--no-app-audio"], timeout: 60)
            #expect(window.status != 0 && window.stderr.contains("offers no window to share"), "\(window)")
            #expect(desktop.dialogsShown == 2, "a window pick asked the chooser")
        }

        /// A new resolution mid-recording: xdg-desktop-portal-wlr renegotiates the stream's
        /// format in place (no new cast, unlike GNOME), and the recording goes on at its size
        /// with the new picture letter-boxed into it.
        @Test func aNewResolutionMidRecordingKeepsItGoingLetterBoxed() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(
                compositor: .sway, width: 640, height: 480, audio: false, scene: WaylandDesktop.Scene(background: Self.background)))
            defer { fixture.stop() }
            let desktop = try #require(fixture.waylandDesktop)
            let movie = try WaylandCapture.recordAcrossAChange(fixture, seconds: 6, changeAfter: 2.5) {
                try desktop.resize(width: 1280, height: 720)
            }
            try WaylandCapture.expectKeptGoingAt640x480(movie, seconds: 6, fixture)
            // 1280x720 fitted into 640x480 is 640x360 in the middle, bars of 60 above and below.
            // (The scene keeps its own 4:3 picture in the wide window: its colour is in the middle.)
            let before = try DecodedFrame(movie, at: 1.5, width: 640, height: 480)
            let after = try DecodedFrame(movie, at: 5.5, width: 640, height: 480)
            let isScene = { (c: DecodedFrame.RGB) in abs(c.r - 0x20) <= 16 && abs(c.g - 0x60) <= 16 && abs(c.b - 0xE0) <= 16 }
            let isBlack = { (c: DecodedFrame.RGB) in c.r + c.g + c.b < 40 }
            #expect(isScene(before.pixel(x: 20, y: 20)), "before: the scene reaches the corner: \(before.pixel(x: 20, y: 20))")
            #expect(isBlack(after.pixel(x: 320, y: 25)) && isBlack(after.pixel(x: 320, y: 455)),
                    "after: bars above and below: \(after.pixel(x: 320, y: 25)) \(after.pixel(x: 320, y: 455))")
            #expect(isScene(after.pixel(x: 320, y: 240)), "after: the scene in the middle: \(after.pixel(x: 320, y: 240))")
        }

        /// xdg-desktop-portal-wlr says with each frame what changed (damage metadata): a small
        /// window that moves on a still desktop is converted alone, onto a copy of the last
        /// picture, and the pictures still show it moving with the rest unchanged.
        @Test func onlyWhatChangedIsConverted() throws {
            var scene = WaylandDesktop.Scene(background: Self.background)
            scene.window = (160, 120)
            let desktop = try WaylandDesktop.start(WaylandDesktop.Options(compositor: .sway, width: 1280, height: 720, scene: scene))
            defer { desktop.stop() }
            let capture = try PortalScreenCapture(options: ScreenCaptureOptions(fps: 30, showCursor: false),
                                                  request: ScreenCastRequest(responseTimeout: 10), busAddress: desktop.busAddress)
            let frames = try WaylandCapture.collect(from: capture, seconds: 3).filter { !$0.isRepeat }
            print("damage: \(capture.picturesConvertedInPart) of \(frames.count) pictures converted in part")
            #expect(frames.count >= 30, "\(frames.count) pictures")
            // All but the first (nothing is known before it) and the odd one whose damage was large.
            #expect(capture.picturesConvertedInPart >= frames.count * 8 / 10, "\(capture.picturesConvertedInPart) of \(frames.count)")
            // The window (560...720 x 300...420) is sampled at x 600, 680 and y 330, 390: the
            // scene's colour or its ball. Everywhere else the samples stay as they were.
            let first = try #require(frames.first)
            let insideIndices = [5 * 16 + 7, 5 * 16 + 8, 6 * 16 + 7, 6 * 16 + 8]
            let outside = { (facts: WaylandCapture.FrameFacts) in
                facts.samples.enumerated().filter { !insideIndices.contains($0.offset) }.map { [$0.element.y, $0.element.u, $0.element.v] }
            }
            #expect(frames.allSatisfy { outside($0) == outside(first) }, "the still desktop changed")
            let expected = WaylandCapture.yuv(of: Self.background)
            // The window's colour in the last picture, which was converted in part: the first
            // is converted whole, and may come before the window is drawn.
            let last = try #require(frames.last)
            let inside = insideIndices.map { last.samples[$0] }
            #expect(inside.contains { abs(Double($0.y) - expected.y) <= 8 && abs(Double($0.u) - expected.u) <= 8 }, "\(inside)")
            #expect(Set(frames.map(\.digest)).count >= frames.count / 2, "the window's ball did not move in the pictures")
        }

        /// sway sends a turned output as it lies in the output's memory, with the turn as
        /// PipeWire metadata: replayd turns it upright and letter-boxes it into the recording's
        /// size. The colour bars show which way up: light grey on the left, blue on the right,
        /// also on a flipped output (a mirror is the display's business: the desktop is not mirrored).
        @Test(arguments: ["90", "flipped-90", "180"])
        func aTurnedOutputIsRecordedUpright(_ transform: String) throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(
                compositor: .sway, width: 640, height: 480, audio: false, scene: .colourBars()))
            defer { fixture.stop() }
            let desktop = try #require(fixture.waylandDesktop)
            let movie = try WaylandCapture.recordAcrossAChange(fixture, seconds: 5, changeAfter: 2) { try desktop.transform(transform) }
            let before = try DecodedFrame(movie, at: 1, width: 640, height: 480)
            let after = try DecodedFrame(movie, at: 4.5, width: 640, height: 480)
            let isGrey = { (c: DecodedFrame.RGB) in c.r > 150 && c.g > 150 && c.b > 150 }
            let isBlue = { (c: DecodedFrame.RGB) in c.b > 150 && c.r < 60 && c.g < 60 }
            #expect(isGrey(before.pixel(x: 20, y: 100)) && isBlue(before.pixel(x: 620, y: 100)),
                    "before: \(before.pixel(x: 20, y: 100)) \(before.pixel(x: 620, y: 100))")
            let left: DecodedFrame.RGB, right: DecodedFrame.RGB, bar: DecodedFrame.RGB?
            if transform == "180" {
                left = after.pixel(x: 20, y: 100)
                right = after.pixel(x: 620, y: 100)
                bar = nil
            } else {
                // Upright the output is 480x640, fitted into 640x480: 360x480 from x = 140. The
                // scene's 4:3 picture fills its width (rows 105 to 375), bars in its top two thirds.
                left = after.pixel(x: 160, y: 180)
                right = after.pixel(x: 480, y: 180)
                bar = after.pixel(x: 60, y: 240)
            }
            print("turned \(transform): left \(left), right \(right), bar \(bar.map(\.description) ?? "none")")
            if let bar { #expect(bar.isBlack, "the letter-box bar: \(bar)") }
            #expect(isGrey(left) && isBlue(right), "after the turn: left \(left), right \(right)")
        }
    }
}
