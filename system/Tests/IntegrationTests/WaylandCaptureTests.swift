import Foundation
@testable import ReplayCapture
import ReplayDBus
import ReplayMedia
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Synchronization
import Testing

extension IntegrationTests {
    /// Capture through the ScreenCast portal and PipeWire on a real headless GNOME desktop
    /// (mutter, xdg-desktop-portal-gnome, PipeWire, WirePlumber on a private bus). Tests that
    /// take a compositor run on sway too (SwayCaptureTests has what differs there).
    @Suite struct WaylandCapture {
        static let background: UInt32 = 0x2060E0

        @Test(arguments: WaylandDesktop.Compositor.withPictures)
        func portalFramesShowTheCompositorsPictureAtItsSizeAndMoving(_ compositor: WaylandDesktop.Compositor) throws {
            let desktop = try WaylandDesktop.start(WaylandDesktop.Options(
                compositor: compositor, width: 1280, height: 720, scene: WaylandDesktop.Scene(background: Self.background)))
            defer { desktop.stop() }
            print("\(compositor) desktop ready in \(String(format: "%.2f", desktop.startupSeconds)) s; monitor \(desktop.monitor)")

            let opened = MonotonicClock.nanoseconds()
            let capture = try PortalScreenCapture(
                options: ScreenCaptureOptions(fps: 30, showCursor: true),
                request: ScreenCastRequest(restoreToken: desktop.restoreToken, responseTimeout: 10), busAddress: desktop.busAddress)
            print("portal session and first format in \(Double(MonotonicClock.nanoseconds() - opened) / 1e6) ms")
            #expect(capture.frameSize == (1280, 720))
            let token = try #require(capture.restoreToken, "Start returned no restore token")
            #expect(!token.isEmpty)

            let collector = Collector()
            var pictureBuffers: [String] = []
            try Self.run(capture, into: collector, seconds: 3) {
                Thread.sleep(forTimeInterval: 1.5)
                pictureBuffers = Self.sharedPictureMappings(atLeast: 1280 * 720 * 4)
            }
            let frames = collector.frames.withLock { $0 }
            let fresh = frames.filter { !$0.isRepeat }
            print("portal frames in 3 s: \(capture.framesFromCompositor) from the compositor, \(fresh.count) delivered, \(frames.count - fresh.count) repeated; distinct pictures \(Set(fresh.map(\.digest)).count); converted in part \(capture.picturesConvertedInPart)")
            print("the compositor's picture buffers mapped: \(pictureBuffers)")
            // The compositor allocates each buffer of whole pictures for this cast alone: it was
            // asked for three (one converted, one waiting, one drawn into) and holds to that.
            #expect(pictureBuffers.count == 3, "\(pictureBuffers.count) of the compositor's picture buffers mapped")
            // Every picture the compositor sent is delivered (the scene draws 30 a second, within
            // the cap); how many it manages depends on the shared CPU, so at least 10 a second.
            #expect(Double(fresh.count) >= 0.95 * Double(capture.framesFromCompositor),
                    "\(fresh.count) of the compositor's \(capture.framesFromCompositor) frames delivered")
            #expect(fresh.count >= 30, "only \(fresh.count) frames in 3 s from a scene drawing 30 per second")
            #expect(fresh.allSatisfy { $0.width == 1280 && $0.height == 720 })
            // The scene's background colour covers most of the screen; the moving ball the rest.
            let last = try #require(fresh.last)
            #expect(last.backgroundShare >= 0.8, "only \(Int(last.backgroundShare * 100))% of samples are the scene's colour: \(last.samples.prefix(4))")
            #expect(fresh.allSatisfy { $0.nonBlackShare > 0.9 })
            // The ball moves every frame: pictures differ.
            #expect(Set(fresh.map(\.digest)).count >= fresh.count / 2)
        }

        @Test func theRestoreTokenOpensTheNextSessionWithoutADialogAndNoTokenWaitsForAPerson() throws {
            let desktop = try WaylandDesktop.start(WaylandDesktop.Options(width: 640, height: 480, scene: nil))
            defer { desktop.stop() }
            let options = ScreenCaptureOptions(fps: 30, showCursor: false)
            var first: PortalScreenCapture? = try PortalScreenCapture(
                options: options, request: ScreenCastRequest(restoreToken: desktop.restoreToken), busAddress: desktop.busAddress)
            let token = try #require(first?.restoreToken)
            // The token the portal returned works on its own (the permission store now has it),
            // while the first cast is still open: mutter serves two casts of one monitor at once.
            let second = try PortalScreenCapture(options: options, request: ScreenCastRequest(restoreToken: token, responseTimeout: 10),
                                                 busAddress: desktop.busAddress)
            #expect(second.frameSize == (640, 480))
            let consumers = try Self.videoConsumerNodes(of: desktop)
            #expect(first != nil && consumers == 2, "\(consumers) casts open")
            first = nil

            // Without a token GNOME's portal asks a person, who is not there: the client times out clearly.
            let started = Date()
            #expect {
                _ = try PortalScreenCapture(options: options, request: ScreenCastRequest(restoreToken: nil, responseTimeout: 4),
                                            busAddress: desktop.busAddress)
            } throws: { error in
                guard let error = error as? CaptureError else { return false }
                print("without a token: \(error.code): \(error.message)")
                return error.code == .portalTimedOut && error.message.contains("dialog")
            }
            #expect(Date().timeIntervalSince(started) < 15)
        }

        @Test(arguments: WaylandDesktop.Compositor.allCases)
        func stoppingTheDesktopEndsEverythingItStartedEvenWhatTheBusStarted(_ compositor: WaylandDesktop.Compositor) throws {
            let desktop = try WaylandDesktop.start(WaylandDesktop.Options(compositor: compositor, width: 640, height: 480))
            // Opening a session makes the bus start the permission store on demand.
            var capture: PortalScreenCapture? = try PortalScreenCapture(
                options: ScreenCaptureOptions(fps: 30, showCursor: false),
                request: ScreenCastRequest(restoreToken: desktop.restoreToken.isEmpty ? nil : desktop.restoreToken, responseTimeout: 10),
                busAddress: desktop.busAddress)
            #expect(capture != nil)
            capture = nil
            let running = desktop.processIDs
            let names = Set(running.compactMap { pid in
                (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            })
            print("desktop processes: \(names.sorted())")
            // (sway runs as another user: root ends it all the same.)
            let compositorProcess = switch compositor {
            case .gnome: "mutter"
            case .gnomeShell: "gnome-shell"
            case .sway: "sway"
            case .kde: "kwin_wayland"
            }
            #expect(names.isSuperset(of: ["dbus-daemon", "pipewire", "wireplumber", compositorProcess, "gst-launch-1.0"]), "\(names)")
            #expect(names.contains { $0.hasPrefix("xdg-permission") }, "the bus-started permission store is not tracked")
            #expect(names.contains { $0.hasPrefix("xdg-desktop-por") })

            desktop.stop()
            let left = running.filter { pid in
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                      let end = stat.lastIndex(of: ")") else { return false }
                return !stat[stat.index(after: end)...].hasPrefix(" Z")
            }
            #expect(left.isEmpty, "still running after stop: \(left)")
            #expect(!FileManager.default.fileExists(atPath: desktop.directory.path))
        }

        @Test func aMissingSessionBusIsAClearError() throws {
            // No session bus at that address.
            let nowhere = FileManager.default.temporaryDirectory.appendingPathComponent("no-bus-\(UUID().uuidString)").path
            #expect {
                _ = try PortalScreenCapture(options: ScreenCaptureOptions(fps: 30, showCursor: false), request: ScreenCastRequest(),
                                            busAddress: "unix:path=\(nowhere)")
            } throws: { error in
                guard let error = error as? CaptureError else { return false }
                return error.code == .portalUnavailable && error.message.contains("session bus")
            }
        }

        @Test func aThreeSecondRecordingThroughThePortalShowsTheScreenWithSoundFromPipeWirePulse() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(
                width: 1280, height: 720, audio: true, scene: WaylandDesktop.Scene(background: Self.background)))
            defer { fixture.stop() }
            let seededInode = try FileManager.default.attributesOfItem(atPath: fixture.portalTokenFile.path)[.systemFileNumber] as? UInt64
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path])
            let movie = fixture.file("wayland.mp4")
            let result = try fixture.replay(["record", "--duration", "3", "--mic", "--json", "--output", movie.path])
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(2000))")
            #expect(fixture.daemonLog.contains("capture=portal"))

            if result.status != 0 || !result.stderr.isEmpty { print(fixture.daemonLog) }
            let probe = try MediaProbe(movie)
            let video = try #require(probe.video)
            #expect(video.codec == "h264")
            #expect(video.width == 1280 && video.height == 720)
            #expect(abs((probe.duration ?? 0) - 3) <= 0.3, "duration \(probe.duration ?? 0)")
            // App audio and the microphone, both through pipewire-pulse.
            #expect(probe.audio.map(\.codec) == ["aac", "aac"])
            print("portal recording: \(video.packets ?? 0) video frames in \(probe.duration ?? 0) s")
            #expect((video.packets ?? 0) >= 45, "only \(video.packets ?? 0) frames")
            let frame = try DecodedFrame(movie, at: 1.5, width: 1280, height: 720)
            let expected = (r: Int(Self.background >> 16), g: Int((Self.background >> 8) & 0xFF), b: Int(Self.background & 0xFF))
            // Corners and edges: the ball is in between, somewhere.
            for (x, y) in [(20, 20), (1260, 20), (20, 700), (1260, 700), (640, 10)] {
                let pixel = frame.pixel(x: x, y: y)
                #expect(abs(pixel.r - expected.r) <= 12 && abs(pixel.g - expected.g) <= 12 && abs(pixel.b - expected.b) <= 12,
                        "\(pixel) at \(x),\(y), expected \(expected)")
            }
            // The portal may hand out a fresh token on every Start; the daemon keeps the newest,
            // and the next recording opens with it, without a dialog.
            // (GNOME 43 gives back the token it was given.) The file was rewritten: a new inode.
            let kept = try String(contentsOf: fixture.portalTokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(kept == fixture.waylandDesktop?.restoreToken)
            let inode = try FileManager.default.attributesOfItem(atPath: fixture.portalTokenFile.path)[.systemFileNumber] as? UInt64
            #expect(inode != seededInode, "the daemon did not keep the token the portal returned")
            let again = try fixture.replay(["record", "--duration", "1", "--no-app-audio", "--json"], timeout: 30)
            #expect(again.status == 0, "\(again)\n\(fixture.daemonLog.suffix(3000))")
            #expect(again.stdout.contains("\"frames\""), "\(again)")

            // The person sees which backend and why, and can make the desktop ask again.
            let sources = try fixture.replay(["sources"])
            #expect(sources.stdout.contains("the ScreenCast portal and PipeWire (chosen with --capture portal)")
                    && sources.stdout.contains("is remembered"), "\(sources)")
            let forgotten = try fixture.replay(["sources", "--forget", "--json"])
            let listing = try #require(try JSONSerialization.jsonObject(with: Data(forgotten.stdout.utf8)) as? [String: Any], "\(forgotten)")
            let capture = try #require(listing["capture"] as? [String: Any], "\(listing)")
            // The portal lists no monitors or windows (its dialog chooses), and says so.
            #expect((listing["monitors"] as? [Any])?.isEmpty == true && (listing["windows"] as? [Any])?.isEmpty == true)
            #expect((listing["notes"] as? [String])?.contains { $0.contains("dialog chooses") } == true, "\(listing)")
            #expect(capture["backend"] as? String == "portal" && capture["remembersScreenChoice"] as? Bool == false, "\(capture)")
            #expect(!FileManager.default.fileExists(atPath: fixture.portalTokenFile.path), "the kept token is still on disk")
        }

        /// A virtual camera that is real to PipeWire: GStreamer's test source as a Video/Source
        /// node, solid red in YUY2 (what webcams send), drawn into the recording's corner.
        @Test func theCameraIsDrawnInTheCornerAskedForAndMovesOnAStillScreen() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(width: 640, height: 480, audio: false, scene: nil))
            defer { fixture.stop() }
            let startCamera = {
                try fixture.start(Command.which("gst-launch-1.0"), [
                    "-q", "videotestsrc", "is-live=true", "pattern=solid-color", "foreground-color=0xffff0000", "!",
                    "video/x-raw,format=YUY2,width=320,height=240,framerate=15/1", "!",
                    "pipewiresink", "mode=provide", "stream-properties=props,media.class=Video/Source,node.name=test-camera",
                ])
            }
            var camera = try startCamera()
            defer { camera.process.terminate() }
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path])
            let isRed = { (c: DecodedFrame.RGB) in c.r > 200 && c.g < 60 && c.b < 60 }

            let movie = fixture.file("camera.mp4")
            var attempt: CommandResult?
            // The camera's node shows up in PipeWire a moment after gst-launch starts.
            for _ in 0..<20 {
                // --no-notify: the test desktop has no notification server, which would be a warning too.
                attempt = try fixture.replay(["record", "--duration", "3", "--no-app-audio", "--camera-device", "test-camera",
                                              "--output", movie.path, "--force", "--no-notify"], timeout: 60)
                if attempt?.stderr.contains("no camera named") == false { break }
                Thread.sleep(forTimeInterval: 0.5)
            }
            let result = try #require(attempt)
            #expect(result.status == 0 && !result.stderr.contains("warning"), "\(result)\n\(fixture.daemonLog.suffix(2000))")
            let frame = try DecodedFrame(movie, at: 2, width: 640, height: 480)
            // 25% of 640 is 160 wide, 120 high for a 4:3 camera, 12 pixels from the bottom-right edges.
            #expect(frame.fraction(x: 472, y: 352, width: 152, height: 112, isRed) > 0.95, "camera: \(frame.pixel(x: 548, y: 408))")
            #expect(frame.fraction(x: 0, y: 0, width: 440, height: 330, isRed) == 0)
            // The screen is still, yet the camera moves: the picture is renewed at the full rate,
            // not repeated four times a second.
            let video = try #require(try MediaProbe(movie).video)
            #expect((video.packets ?? 0) >= 70, "\(video.packets ?? 0) frames in 3 s")

            // Another corner and size. (A second recording from the same pipewiresink node got
            // no pictures here, while one from a fresh node did: the test camera is started
            // afresh. Whether a V4L2 camera's node behaves so could not be tried on this machine.)
            camera.process.terminate()
            camera = try startCamera()
            Thread.sleep(forTimeInterval: 1)
            let topLeft = fixture.file("camera-top-left.mp4")
            let corner = try fixture.replay(["record", "--duration", "2", "--no-app-audio", "--camera-device", "test-camera",
                                             "--camera-corner", "top-left", "--camera-size", "50", "--output", topLeft.path], timeout: 60)
            #expect(corner.status == 0, "\(corner)")
            let placed = try DecodedFrame(topLeft, at: 1.5, width: 640, height: 480)
            // 320x240 at 12,12.
            #expect(placed.fraction(x: 16, y: 16, width: 312, height: 232, isRed) > 0.95,
                    "\(fixture.daemonLog.split(separator: "\n").filter { $0.contains("camera") }.joined(separator: "\n"))")
            #expect(placed.fraction(x: 360, y: 270, width: 280, height: 210, isRed) == 0)

            // No such camera: the recording goes on without it, and says why.
            let missing = try fixture.replay(["record", "--duration", "1", "--no-app-audio", "--camera-device", "no-such-camera"], timeout: 60)
            #expect(missing.status == 0 && missing.stderr.contains("camera not drawn in") && missing.stderr.contains("no-such-camera"),
                    "\(missing)")
        }

        @Test func aStillScreenSendsOnePictureWhichIsRepeated() throws {
            // No client at all: a scene, even a solid colour, commits a new buffer every frame.
            let desktop = try WaylandDesktop.start(WaylandDesktop.Options(width: 640, height: 480, scene: nil))
            defer { desktop.stop() }
            let capture = try PortalScreenCapture(
                options: ScreenCaptureOptions(fps: 30, showCursor: false),
                request: ScreenCastRequest(restoreToken: desktop.restoreToken), busAddress: desktop.busAddress)
            let frames = try Self.collect(from: capture, seconds: 2)
            let fresh = frames.filter { !$0.isRepeat }, repeats = frames.filter(\.isRepeat)
            print("still screen, 2 s: \(capture.framesFromCompositor) from the compositor, \(fresh.count) new, \(repeats.count) repeated")
            // The first picture is there from the start, then the compositor sends nothing new;
            // the last picture is repeated every 250 ms so encoders never starve.
            #expect(fresh.count >= 1 && fresh.count <= 3, "\(fresh.count) new frames of a still screen")
            #expect((6...9).contains(repeats.count), "\(repeats.count) repeats in 2 s")
        }

        @Test func replaydWithThePortalAndNoSessionBusSaysSoOnRecord() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            let nowhere = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(fixture.directory.path)/no-bus"]
            try fixture.startDaemon(["--capture", "portal"], environment: nowhere)
            let result = try fixture.replay(["record", "--duration", "1", "--no-app-audio"], environment: nowhere, timeout: 30)
            #expect(result.status != 0)
            #expect(result.stderr.contains("session bus") && result.stderr.contains("ScreenCast"), "\(result)")
        }

        /// No screen choice is remembered: `replay record` says the desktop is asking, waits
        /// for the dialog (3 s here; nobody answers it) and then fails naming it.
        @Test func withNoRememberedChoiceRecordSaysTheDesktopIsAskingAndGivesUpAfterTheTimeout() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(width: 640, height: 480, audio: false, scene: nil))
            defer { fixture.stop() }
            let noToken = fixture.file("no-token").path
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", noToken, "--screen-choice-timeout", "3"])
            let sources = try fixture.replay(["sources"])
            #expect(sources.stdout.contains("no screen chosen yet"), "\(sources)")
            let result = try fixture.replay(["record", "--duration", "1", "--no-app-audio"], timeout: 60)
            #expect(result.status != 0, "\(result)")
            #expect(result.stderr.contains("The desktop is asking which screen to share") && result.stderr.contains("up to 3 s"), "\(result)")
            #expect(result.stderr.contains("dialog that nobody answered"), "\(result)")
            #expect(fixture.storedMovies().isEmpty)
        }

        /// The issue's measure: 10 s of a scene that draws 30 pictures a second, recorded through
        /// replayd, keeps at least 95% of them, with the scene's colours.
        @Test(arguments: WaylandDesktop.Compositor.withPictures)
        func aTenSecondRecordingKeepsNearlyEveryFrameTheSceneDrewInItsColours(_ compositor: WaylandDesktop.Compositor) throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(
                compositor: compositor, width: 1280, height: 720, audio: false, scene: WaylandDesktop.Scene(background: Self.background)))
            defer { fixture.stop() }
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path])
            let movie = fixture.file("ten-seconds.mp4")
            let result = try fixture.replay(["record", "--duration", "10", "--no-app-audio", "--output", movie.path], timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(2000))")
            let probe = try MediaProbe(movie)
            let video = try #require(probe.video)
            let duration = try #require(probe.duration)
            let frames = video.packets ?? 0
            // videotestsrc is live: it draws exactly 30 a second, whatever the load.
            let drawn = Int((duration * 30).rounded())
            print("10 s through the portal on \(compositor): \(frames) frames of the scene's \(drawn) (\(frames * 100 / max(1, drawn))%) in \(duration) s")
            #expect(abs(duration - 10) <= 0.5, "duration \(duration)")
            // The issue's 95% holds on sway (99–100% in every run here, full CI runs too). mutter
            // renders in software and drops frames of its own on a busy machine (quiet runs kept
            // 92–100%, one beside a benchmark 80%), so GNOME is held to 85% of what the scene drew;
            // that replayd delivers 95% of what mutter sends is the first test's. That twice the
            // cap is asked, without which mutter sent 88%, is pinned by ScreenCastPortalTests.
            let share = compositor == .sway ? 0.95 : 0.85
            #expect(Double(frames) >= share * Double(drawn), "\(frames) of \(drawn) frames")
            let frame = try DecodedFrame(movie, at: 8, width: 1280, height: 720)
            let expected = (r: Int(Self.background >> 16), g: Int((Self.background >> 8) & 0xFF), b: Int(Self.background & 0xFF))
            // The scene's colour in the corners, but for the one the moving ball may be passing.
            let corners = [(20, 20), (1260, 20), (20, 700), (1260, 700)].map { frame.pixel(x: $0.0, y: $0.1) }
            let matching = corners.filter { abs($0.r - expected.r) <= 12 && abs($0.g - expected.g) <= 12 && abs($0.b - expected.b) <= 12 }
            #expect(matching.count >= 3, "corners \(corners), expected \(expected)")
        }

        /// A person turns the screen mid-recording: the stream renegotiates to 480x640, the
        /// recording goes on at 640x480 with the turned picture letter-boxed into it.
        @Test func rotatingTheScreenMidRecordingKeepsItGoingLetterBoxed() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(
                width: 640, height: 480, audio: false, scene: WaylandDesktop.Scene(background: Self.background)))
            defer { fixture.stop() }
            let desktop = try #require(fixture.waylandDesktop)
            let movie = try Self.recordAcrossAChange(fixture, seconds: 6, changeAfter: 2.5) { try desktop.rotate(quarterTurns: 1) }
            try Self.expectKeptGoingAt640x480(movie, seconds: 6, fixture)
            // Before: the scene edge to edge. After: 480x640 fitted into 640x480 is 360x480 in
            // the middle, with black bars of 140 on the left and right.
            let before = try DecodedFrame(movie, at: 1.5, width: 640, height: 480)
            let after = try DecodedFrame(movie, at: 5.5, width: 640, height: 480)
            let edge = before.pixel(x: 20, y: 240), barLeft = after.pixel(x: 40, y: 240), barRight = after.pixel(x: 600, y: 240)
            // (The scene keeps its 4:3 picture inside the turned screen, with bars of its own
            // above and below: its colour is in the middle.)
            let middle = after.pixel(x: 320, y: 240)
            #expect(edge.r + edge.g + edge.b > 200, "before the turn the scene reaches the edge: \(edge)")
            #expect(barLeft.r + barLeft.g + barLeft.b < 40 && barRight.r + barRight.g + barRight.b < 40,
                    "after the turn the sides are bars: \(barLeft) \(barRight)")
            #expect(middle.r + middle.g + middle.b > 200, "after the turn the scene is in the middle: \(middle)")
        }

        /// A stream that stopped reading is gone from PipeWire when `disconnect` returns, before
        /// a rotated monitor's next cast is asked for. Left behind (its removal unsent until its
        /// connection closed), it still named mutter's old node by id; PipeWire gives ids again,
        /// mutter's next node got the same one, WirePlumber linked the dead stream to it, and
        /// the recording's new stream agreed on no format (one CI run; one run in three here
        /// with the machine busy and the screen turned every 2.5 s).
        @Test func aStreamThatStoppedReadingIsGoneFromPipeWireWhenDisconnectReturns() throws {
            let desktop = try WaylandDesktop.start(WaylandDesktop.Options(
                width: 640, height: 480, audio: false, scene: WaylandDesktop.Scene(background: Self.background)))
            defer { desktop.stop() }
            let connection = try DBusConnection(address: desktop.busAddress)
            let session = try ScreenCastPortal(bus: SDBusPortalBus(connection))
                .open(ScreenCastRequest(restoreToken: desktop.restoreToken, responseTimeout: 10))
            defer { session.close() }
            let stream = try PipeWireStream(.portal(remote: session.takePipeWireRemote(), node: session.streams[0].nodeID),
                                            preferredWidth: 640, preferredHeight: 480, maxFPS: 30)
            let deadline = Date().addingTimeInterval(10)
            while stream.format == nil && Date() < deadline { try stream.iterate(timeout: 0.1) }
            try #require(stream.format != nil, "the cast agreed on no format")
            #expect(try Self.videoConsumerNodes(of: desktop) == 1)
            stream.disconnect()
            // Asked of PipeWire by another client, at once: nothing of ours is left to link.
            #expect(try Self.videoConsumerNodes(of: desktop) == 0)
        }

        /// A broadcast reads the portal's stream just as a recording does, and a turned screen
        /// is fitted into the broadcast's size: the extension never sees another size.
        @Test(arguments: WaylandDesktop.Compositor.withPictures)
        func aBroadcastToTheFileExtensionGetsTheScenesPicturesAndSoundAndSurvivesARotation(_ compositor: WaylandDesktop.Compositor) throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(
                compositor: compositor, width: 640, height: 480, audio: true, scene: WaylandDesktop.Scene(background: 0xF0F0F0)))
            defer { fixture.stop() }
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path]
                                    + Broadcast.installExtensions(in: fixture))
            let output = fixture.file("out")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            let start = try fixture.replay(["broadcast", "start", "--extension", "file", "--setup", "dir=\(output.path)", "--mic"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog.suffix(2000))")
            Thread.sleep(forTimeInterval: 3)
            try #require(fixture.waylandDesktop).rotate(quarterTurns: 1)
            // Until the turned screen has reached the broadcast (on a busy machine the compositor
            // takes its time), then a little more of it.
            let turned = Date().addingTimeInterval(15)
            while !fixture.daemonLog.contains("content resized: fitted into the broadcast's size") && Date() < turned {
                Thread.sleep(forTimeInterval: 0.1)
            }
            Thread.sleep(forTimeInterval: 1.5)
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            let final = try #require(try Broadcast.waitUntilOver(fixture))
            #expect(final["state"] as? String == "finished", "\(final)\n\(fixture.daemonLog.suffix(3000))")
            let lines = try String(contentsOf: output.appendingPathComponent("broadcast.jsonl"), encoding: .utf8)
                .split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let video = lines.filter { $0["event"] as? String == "video" }
            let lumas = video.compactMap { $0["luma"] as? Int }
            print("broadcast through the portal on \(compositor): \(video.count) pictures; luma \(lumas.prefix(3)) … \(lumas.suffix(3))")
            #expect(video.count >= 75, "\(video.count) pictures")
            #expect(video.allSatisfy { $0["width"] as? Int == 640 && $0["height"] as? Int == 480 })
            // The extension averages luma at columns 0 and 320. Before the turn both are the
            // near-white scene (about 222 in video range). After it, column 0 is our black bar
            // (16) and column 320 crosses the turned screen, where the scene keeps its 4:3
            // picture between bars of its own (56% of the rows): about 73 in all.
            #expect(lumas.prefix(30).allSatisfy { $0 > 180 }, "\(lumas.prefix(30))")
            #expect(lumas.suffix(15).allSatisfy { (55...95).contains($0) }, "\(lumas.suffix(15))")
            #expect(fixture.daemonLog.contains("content resized: fitted into the broadcast's size"), "\(fixture.daemonLog.suffix(2000))")
            let events = Set(lines.compactMap { $0["event"] as? String })
            #expect(events.isSuperset(of: ["appAudio", "micAudio", "finished"]), "\(events)")
        }

        /// The flash-and-beep pattern as a Wayland client with its sound through pipewire-pulse:
        /// the recording keeps each flash with its beep. The test's own sound path wanders: the
        /// scene's beeps go through pipewire-pulse's dummy driver, whose latency estimate moved
        /// the beeps by up to ±30 ms within a run here (one run went from +20 to -39 ms), while
        /// the capture's own stamps were smooth; so the typical offset (the median) must be
        /// within a frame, and every one within two.
        @Test func lipSyncThroughThePortalAndPipeWirePulseIsWithinAFrame() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(
                width: 640, height: 480, audio: true, scene: .flashesAndBeeps(seconds: 60)))
            defer { fixture.stop() }
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path])
            let movie = fixture.file("lipsync.mp4")
            let result = try fixture.replay(["record", "--duration", "12", "--output", movie.path], timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(2000))")
            let sync = try LipSync(movie)
            print("Wayland lip sync over 12 s: audio minus video offsets (ms):", sync.offsets.map { ($0 * 10).rounded() / 10 })
            #expect(sync.offsets.count >= 10, "flashes \(sync.flashes), beeps \(sync.beeps)")
            #expect(sync.medianAbsoluteOffset <= LipSync.limit(frames: 1), "offsets \(sync.offsets)")
            #expect(sync.maxAbsoluteOffset <= LipSync.limit(frames: 2), "offsets \(sync.offsets)")
        }

        // MARK: helpers

        /// What the test keeps of a frame: its size, colour statistics and a digest of its luma.
        struct FrameFacts: Sendable {
            let width: Int, height: Int, isRepeat: Bool
            let backgroundShare: Double
            let nonBlackShare: Double
            let digest: Int
            let samples: [(y: UInt8, u: UInt8, v: UInt8)]
        }

        final class Collector: CaptureOutput {
            let frames = Mutex<[FrameFacts]>([])
            func offer(_ frame: VideoSample) -> Bool {
                let facts = WaylandCapture.facts(of: frame)
                frames.withLock { $0.append(facts) }
                return true
            }
            func append(_ audio: AudioBuffer) {}
            func formatChanged(width: Int, height: Int) {}
        }

        /// Starts replayd on the fixture's desktop and records `seconds` into a movie, making
        /// `change` (a new size, a turn) `changeAfter` seconds in; the recording must end well.
        static func recordAcrossAChange(_ fixture: ReplayFixture, seconds: Int, changeAfter: Double,
                                        _ change: () throws -> Void) throws -> URL {
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path])
            let movie = fixture.file("changed.mp4")
            let recording = try fixture.startReplay(["record", "--duration", "\(seconds)", "--no-app-audio", "--output", movie.path])
            Thread.sleep(forTimeInterval: changeAfter)
            try change()
            let result = recording.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(2000))")
            return movie
        }

        /// A recording across a change of the screen's size went on to its end at its own
        /// 640x480, at a steady rate, and replayd noticed the change.
        static func expectKeptGoingAt640x480(_ movie: URL, seconds: Int, _ fixture: ReplayFixture) throws {
            #expect(fixture.daemonLog.contains("screen resized"), "\(fixture.daemonLog.suffix(2000))")
            let probe = try MediaProbe(movie)
            let video = try #require(probe.video)
            #expect(video.width == 640 && video.height == 480)
            let duration = try #require(probe.duration)
            #expect(abs(duration - Double(seconds)) <= 0.5, "duration \(duration)")
            #expect((video.packets ?? 0) >= Int(duration * 20), "\(video.packets ?? 0) frames in \(duration) s")
        }

        /// How many nodes that read video (a screen cast's consumers) the desktop's PipeWire
        /// has, as `pw-dump` lists them.
        static func videoConsumerNodes(of desktop: WaylandDesktop) throws -> Int {
            let dump = try Command.run("/usr/bin/pw-dump", [], environment: desktop.environment, timeout: 20)
            let objects = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [[String: Any]], "\(dump)")
            return objects.filter { object in
                let properties = (object["info"] as? [String: Any])?["props"] as? [String: Any]
                return object["type"] as? String == "PipeWire:Interface:Node" && properties?["media.class"] as? String == "Stream/Input/Video"
            }.count
        }

        /// This process's shared mappings of at least `bytes`: a compositor's picture buffers, as
        /// PipeWire maps them (mutter's memfds, xdg-desktop-portal-wlr's shm files). Each one's
        /// address range and what it maps, from /proc/self/maps.
        static func sharedPictureMappings(atLeast bytes: Int) -> [String] {
            let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
            return maps.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count >= 6, fields[1].hasSuffix("s") else { return nil }
                let range = fields[0].split(separator: "-").compactMap { Int($0, radix: 16) }
                guard range.count == 2 && range[1] - range[0] >= bytes else { return nil }
                return "\(fields[0]) \(fields[5...].joined(separator: " "))"
            }
        }

        static func collect(from capture: PortalScreenCapture, seconds: Double) throws -> [FrameFacts] {
            let collector = Collector()
            try run(capture, into: collector, seconds: seconds)
            return collector.frames.withLock { $0 }
        }

        /// Runs `capture` into `output` on a thread of its own for `seconds`, calling `meanwhile`
        /// (on this thread) once it has started.
        static func run(_ capture: PortalScreenCapture, into output: some CaptureOutput, seconds: Double,
                        meanwhile: () throws -> Void = {}) throws {
            let stop = StopFlag()
            let failure = Mutex<CaptureError?>(nil)
            let box = UncheckedBox(capture)
            let finished = DispatchSemaphore(value: 0)
            Thread {
                do throws(CaptureError) { try box.value.run(output: output, stop: stop) } catch { failure.withLock { $0 = error } }
                finished.signal()
            }.start()
            let started = Date()
            var meanwhileFailure: (any Error)?
            do { try meanwhile() } catch { meanwhileFailure = error }
            Thread.sleep(forTimeInterval: max(0, seconds - Date().timeIntervalSince(started)))
            stop.raise()
            #expect(finished.wait(timeout: .now() + 5) == .success, "run did not return after stop")
            if let error = failure.withLock({ $0 }) { throw error }
            if let meanwhileFailure { throw meanwhileFailure }
        }

        /// BT.601 limited range, as libyuv's ARGB to I420.
        static func yuv(of rgb: UInt32) -> (y: Double, u: Double, v: Double) {
            let r = Double((rgb >> 16) & 0xFF), g = Double((rgb >> 8) & 0xFF), b = Double(rgb & 0xFF)
            return (16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255,
                    128 + (-37.797 * r - 74.203 * g + 112 * b) / 255,
                    128 + (112 * r - 93.786 * g - 18.214 * b) / 255)
        }

        static func facts(of frame: VideoSample) -> FrameFacts {
            let pixels = frame.pixels
            let bytes = pixels.bytes
            let expected = yuv(of: background)
            var samples: [(y: UInt8, u: UInt8, v: UInt8)] = []
            for row in 0..<12 {
                for column in 0..<16 {
                    let x = (column * 2 + 1) * pixels.width / 32 & ~1, y = (row * 2 + 1) * pixels.height / 24 & ~1
                    let luma = bytes[y * pixels.stride(ofPlane: 0) + x]
                    let chroma = (y / 2) * pixels.stride(ofPlane: 1) + x / 2
                    samples.append((luma, bytes[pixels.offset(ofPlane: 1) + chroma], bytes[pixels.offset(ofPlane: 2) + chroma]))
                }
            }
            let matching = samples.filter {
                abs(Double($0.y) - expected.y) <= 8 && abs(Double($0.u) - expected.u) <= 8 && abs(Double($0.v) - expected.v) <= 8
            }.count
            let nonBlack = samples.filter { $0.y > 24 }.count
            var hasher = Hasher()
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes[0..<(pixels.width * pixels.height)]))
            return FrameFacts(width: pixels.width, height: pixels.height, isRepeat: frame.isRepeat,
                              backgroundShare: Double(matching) / Double(samples.count),
                              nonBlackShare: Double(nonBlack) / Double(samples.count), digest: hasher.finalize(), samples: samples)
        }
    }
}

/// Hands a non-Sendable capture to the thread that runs it (one thread at a time uses it).
private final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
