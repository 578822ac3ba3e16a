import Foundation
import ReplayCapture
import ReplayMedia
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Synchronization
import Testing

extension IntegrationTests {
    /// The pointer through the portal's metadata cursor mode, on GNOME: mutter says where the
    /// pointer is and sends its picture beside the screen's; replayd draws it (or not).
    @Suite struct WaylandCursor {
        static let background: UInt32 = 0x2060E0

        /// A desktop whose fullscreen window shows the arrow, with the pointer at 200, 150.
        static func desktop() throws -> WaylandDesktop {
            var scene = WaylandDesktop.Scene(background: background, moving: false)
            scene.showsCursor = true
            let desktop = try WaylandDesktop.start(WaylandDesktop.Options(width: 640, height: 480, scene: scene))
            do {
                try desktop.movePointer(x: 200, y: 150)
            } catch {
                desktop.stop()
                throw error
            }
            return desktop
        }

        /// The screen with the pointer asked as metadata (drawn by the capture when `showCursor`).
        static func capture(_ desktop: WaylandDesktop, showCursor: Bool) throws -> PortalScreenCapture {
            try PortalScreenCapture(
                options: ScreenCaptureOptions(fps: 30, showCursor: showCursor),
                request: ScreenCastRequest(showCursor: showCursor, drawsMetadataCursor: true, restoreToken: desktop.restoreToken,
                                           responseTimeout: 10),
                busAddress: desktop.busAddress)
        }

        @Test func theCursorIsDrawnWhereThePointerIsAndFollowsIt() throws {
            let desktop = try Self.desktop()
            defer { desktop.stop() }
            let capture = try Self.capture(desktop, showCursor: true)
            let pictures = Pictures()
            try WaylandCapture.run(capture, into: pictures, seconds: 3) {
                Thread.sleep(forTimeInterval: 1.2)
                pictures.mark()
                // Only the pointer moves: the window itself is still (mutter sends a picture
                // with the new place, where it has no damage to name).
                try desktop.movePointer(x: 450, y: 350)
            }
            let (before, after) = pictures.lastBeforeAndAfterMark()
            let first = try #require(before, "no picture before the move")
            let last = try #require(after, "no picture after the move")
            let background = WaylandCapture.yuv(of: Self.background).y
            let arrowBefore = Self.differing(first, around: (200, 150), from: background)
            let arrowAfter = Self.differing(last, around: (450, 350), from: background)
            print("cursor: \(arrowBefore) pixels of the arrow at 200,150; \(arrowAfter) at 450,350 after the move; "
                  + "\(pictures.count) pictures, \(capture.framesFromCompositor) from the compositor")
            // Adwaita's arrow is 24x24 with its hotspot near the top-left: a good hundred pixels.
            #expect(arrowBefore > 60, "no arrow where the pointer was")
            #expect(arrowAfter > 60, "no arrow where the pointer went")
            #expect(Self.differing(last, around: (200, 150), from: background) == 0, "the arrow was left behind")
            #expect(Self.differing(first, around: (450, 350), from: background) == 0)
            // Nothing else on the screen differs from the window's colour.
            #expect(Self.differing(last, around: (320, 60), from: background) == 0)
        }

        @Test func withoutTheCursorTheScreenHasNoArrow() throws {
            let desktop = try Self.desktop()
            defer { desktop.stop() }
            let capture = try Self.capture(desktop, showCursor: false)
            let pictures = Pictures()
            try WaylandCapture.run(capture, into: pictures, seconds: 2) {
                Thread.sleep(forTimeInterval: 0.8)
                try desktop.movePointer(x: 220, y: 160)
            }
            let last = try #require(pictures.last)
            let background = WaylandCapture.yuv(of: Self.background).y
            #expect(Self.differing(last, around: (200, 150), from: background) == 0)
            #expect(Self.differing(last, around: (220, 160), from: background) == 0)
        }

        /// Through replayd: `replay record` shows the pointer (asked of GNOME as metadata and
        /// drawn by replayd), and `--no-cursor` leaves it out.
        @Test func aRecordingShowsThePointerAndNoCursorLeavesItOut() throws {
            var scene = WaylandDesktop.Scene(background: Self.background, moving: false)
            scene.showsCursor = true
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(width: 640, height: 480, audio: false, scene: scene))
            defer { fixture.stop() }
            let desktop = try #require(fixture.waylandDesktop)
            try desktop.movePointer(x: 300, y: 200)
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path])
            let isArrow = { (c: DecodedFrame.RGB) in abs(c.r - 0x20) + abs(c.g - 0x60) + abs(c.b - 0xE0) > 90 }
            var shares: [Double] = []
            for (name, flags) in [("with.mp4", [String]()), ("without.mp4", ["--no-cursor"])] {
                let movie = fixture.file(name)
                let result = try fixture.replay(["record", "--duration", "2", "--no-app-audio", "--output", movie.path] + flags, timeout: 60)
                #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(2000))")
                let frame = try DecodedFrame(movie, at: 1.5, width: 640, height: 480)
                shares.append(frame.fraction(x: 298, y: 198, width: 24, height: 24, step: 2, isArrow))
                #expect(frame.fraction(x: 0, y: 0, width: 640, height: 160, isArrow) == 0, "\(name): something besides the arrow")
            }
            print("arrow's share of 24x24 at the pointer: \(shares)")
            #expect(shares[0] > 0.15, "no pointer in the recording")
            #expect(shares[1] == 0, "--no-cursor recorded the pointer")
        }

        // MARK: helpers

        /// Luma samples within 24 pixels right and below of `point` (where an arrow whose
        /// hotspot is at its tip lies) more than 20 away from `luma`.
        static func differing(_ picture: PixelBuffer, around point: (Int, Int), from luma: Double) -> Int {
            var count = 0
            for y in max(0, point.1 - 4)..<min(picture.height, point.1 + 28) {
                for x in max(0, point.0 - 4)..<min(picture.width, point.0 + 28)
                where abs(Double(picture.bytes[y * picture.stride(ofPlane: 0) + x]) - luma) > 20 {
                    count += 1
                }
            }
            return count
        }

        /// Keeps a copy of every new picture, and which came after `mark`.
        final class Pictures: CaptureOutput, @unchecked Sendable {
            private let kept = Mutex<(pictures: [PixelBuffer], markAt: Int?)>(([], nil))
            func offer(_ frame: VideoSample) -> Bool {
                if !frame.isRepeat { let copy = frame.pixels.copy(); kept.withLock { $0.pictures.append(copy) } }
                return true
            }
            func append(_ audio: AudioBuffer) {}
            func formatChanged(width: Int, height: Int) {}
            func mark() { kept.withLock { $0.markAt = $0.pictures.count } }
            var count: Int { kept.withLock { $0.pictures.count } }
            var last: PixelBuffer? { kept.withLock { $0.pictures.last } }
            func lastBeforeAndAfterMark() -> (PixelBuffer?, PixelBuffer?) {
                kept.withLock { kept in
                    let mark = kept.markAt ?? kept.pictures.count
                    return (kept.pictures.prefix(mark).last, mark < kept.pictures.count ? kept.pictures.last : nil)
                }
            }
        }
    }
}
