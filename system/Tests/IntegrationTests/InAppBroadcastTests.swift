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
    /// The in-app case ("Conferencing"): an app puts only its own windows into a call through
    /// the picker and the `webrtc` extension; a viewer in headless Chromium sees the app's
    /// window and never the rest of the screen (the demo scene's full-screen flash).
    @Suite struct InAppBroadcast {
        /// The colours of the viewer's video at screen points, scaled to the video's size:
        /// [[r, g, b], …].
        static func colours(at points: [(x: Int, y: Int)]) -> String {
            let list = points.map { "[\($0.x), \($0.y)]" }.joined(separator: ",")
            return """
                (() => {
                  const video = document.querySelector('video');
                  const canvas = document.createElement('canvas');
                  canvas.width = video.videoWidth; canvas.height = video.videoHeight;
                  const context = canvas.getContext('2d');
                  context.drawImage(video, 0, 0);
                  return [\(list)].map(([x, y]) => {
                    const pixel = context.getImageData(Math.floor(x * video.videoWidth / 640), Math.floor(y * video.videoHeight / 480), 1, 1).data;
                    return [pixel[0], pixel[1], pixel[2]];
                  });
                })()
                """
        }

        /// A receiving page shows only the app's window: green at the screen points `inside`,
        /// black at `outside`, and over about four seconds of pictures (the page's probe samples
        /// every 15 ms) none near as bright as the demo scene's full-screen white flash.
        static func expectOnlyTheAppsGreenWindow(_ page: HeadlessBrowser.Page, inside: [(x: Int, y: Int)],
                                                 outside: [(x: Int, y: Int)]) throws {
            let pixels = try #require(try page.evaluate(colours(at: inside + outside)) as? [[Int]])
            #expect(pixels.count == inside.count + outside.count)
            for (index, pixel) in pixels.enumerated() where pixel.count == 3 {
                if index < inside.count {
                    #expect(pixel[1] > 180 && pixel[0] < 80 && pixel[2] < 80, "the app's window at \(inside[index]) is \(pixel), not green")
                } else {
                    #expect(pixel.allSatisfy { $0 < 40 }, "the screen outside the app at \(outside[index - inside.count]) is \(pixel), not black")
                }
            }
            try page.waitUntil("window.probe.samples >= 300", timeout: 30)
            let brightest = try page.evaluate("window.probe.maxLuma") as? Double ?? 255
            #expect(brightest < 120, "a picture of mean luma \(brightest): the rest of the screen reached the receiver")
        }

        @Test func anAppBroadcastsOnlyItsOwnWindowToAWebRTCViewerAndTheBroadcastEndsWithTheApp() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let (app, browser, picker) = try Broadcast.openPicker(
                fixture, appArguments: ["--colour", "green", "--go-live", "webrtc", "--in-app", "--live-seconds", "600"],
                extensions: WebRTC.installExtension(in: fixture))
            defer { browser.stop() }

            // The person is told it is the app's own windows, not the screen.
            let text = try picker.text()
            #expect(text.contains("secret-notes wants to broadcast its own windows") && !text.contains("whole screen"), "\(text)")
            #expect(try picker.evaluate("document.getElementById('scope').dataset.scope") as? String == "app")
            _ = try picker.evaluate("document.getElementById('setup-webrtc-viewer-port').value = 'auto'")
            try picker.click("#start")
            try picker.waitUntil("document.getElementById('result') !== null && document.getElementById('result').textContent === 'Live'",
                                 timeout: 30)

            let live = try #require(try Broadcast.waitForStatus(fixture) { ($0["broadcastURL"] as? String)?.hasPrefix("http://127.0.0.1:") == true },
                                    "\(fixture.daemonLog)")
            #expect(live["scope"] as? String == "app" && live["state"] as? String == "live", "\(live)")
            let url = try #require(live["broadcastURL"] as? String)
            // The host app hears the URL; another app sees the broadcast but not where to watch it.
            let hostHeard = app.waitForJSONLine { $0["url"] as? String == url }
            #expect(hostHeard?["scope"] as? String == "app", "\(app.outputSoFar)")
            let other = try MessageChannel.connect(path: fixture.socket)
            try other.send(ClientRequest.broadcastStatus)
            guard case .broadcasts(let seen)? = try other.receive(DaemonEvent.self)?.message else {
                Issue.record("no broadcast status for another app")
                return
            }
            #expect(seen.count == 1 && seen[0].scope == .app && seen[0].broadcastURL == nil, "\(seen)")
            other.close()

            let viewer = try browser.open(url)
            try viewer.waitUntil("window.viewer && window.viewer.state === 'connected'", timeout: 30)
            _ = try viewer.evaluate(WebRTC.installProbe)
            try viewer.waitUntil("(async () => (await (\(WebRTC.inbound("window.viewer.pc"))))[0] > 30)()", timeout: 30)

            // The app's window (0,0 200x200 on the 640x480 screen: Broadcast.openPicker's geometry),
            // green below its white strip; black everywhere else on the screen.
            try Self.expectOnlyTheAppsGreenWindow(viewer, inside: [(100, 150), (30, 120), (170, 190)],
                                                  outside: [(400, 300), (600, 40), (320, 460), (250, 100)])
            #expect(try WebRTC.counters(viewer, "window.viewer.pc").frames > 30)

            // The app quits: its broadcast ends with it (there is nothing of it left to show).
            app.process.signal(SIGKILL)
            _ = app.finish(timeout: 10)
            let ended = try Broadcast.waitForStatus(fixture) { ["finished", "failed"].contains($0["state"] as? String ?? "") }
            #expect(ended?["state"] as? String == "finished", "\(String(describing: ended))\n\(fixture.daemonLog)")
            #expect(fixture.daemon?.isRunning == true)

            // The same check on a broadcast of the screen sees the flash: it would have caught it.
            let start = try fixture.replay(["broadcast", "start", "--extension", "webrtc", "--setup", "viewer-port=auto", "--json"])
            #expect(start.status == 0, "\(start)")
            let screenID = try #require((try JSONSerialization.jsonObject(with: Data(start.stdout.utf8)) as? [[String: Any]])?.first?["id"] as? String,
                                        "\(start)")
            var screen: [String: Any] = [:]
            for _ in 0..<100 where screen["broadcastURL"] == nil {
                screen = try Broadcast.status(fixture).first { $0["id"] as? String == screenID && $0["broadcastURL"] is String } ?? [:]
                if screen.isEmpty { Thread.sleep(forTimeInterval: 0.2) }
            }
            #expect(screen["scope"] as? String == "screen", "\(screen)")
            let control = try browser.open(try #require(screen["broadcastURL"] as? String))
            try control.waitUntil("window.viewer && window.viewer.state === 'connected'", timeout: 30)
            _ = try control.evaluate(WebRTC.installProbe)
            try control.waitUntil("window.probe.maxLuma > 200", timeout: 30)
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
        }

        @Test func thePersonBroadcastsTheScreenAndThePickerSaysSo() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            let (app, browser, picker) = try Broadcast.openPicker(fixture, appArguments: ["--go-live", "webrtc", "--live-seconds", "1"],
                                                                  extensions: WebRTC.installExtension(in: fixture))
            defer { browser.stop() }
            let text = try picker.text()
            #expect(text.contains("secret-notes wants to go live with your whole screen") && !text.contains("its own windows"), "\(text)")
            #expect(try picker.evaluate("document.getElementById('scope').dataset.scope") as? String == "screen")
            app.process.signal(SIGKILL)
            _ = app.finish(timeout: 10)

            // An app cannot start a broadcast of its windows, or any, without the person's picker.
            let channel = try MessageChannel.connect(path: fixture.socket)
            try channel.send(ClientRequest.startBroadcast(request: BroadcastRequest(extensionID: "webrtc", setup: ["viewer-port": "auto"], scope: .app)))
            guard case .error(let code, _)? = try channel.receive(DaemonEvent.self)?.message else {
                Issue.record("an app-scoped broadcast started without the picker")
                return
            }
            #expect(code == .notPermitted)
            #expect(try Broadcast.status(fixture).isEmpty)
            #expect(fixture.daemon?.isRunning == true)
        }
    }
}
