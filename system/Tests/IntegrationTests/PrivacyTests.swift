import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// The privacy architecture, tested the way an adversary would try it: apps of other
    /// users, apps without consent, windows of other clients, pages without tokens.
    @Suite struct Privacy {
        /// A policy that lets the example app capture without asking anyone.
        static func allowExampleApp(in fixture: ReplayFixture) throws -> [String] {
            let policy = fixture.file("policy.json")
            try Data(#"{"default": "ask", "apps": {"\#(ReplayFixture.secretNotes)": "allow"}}"#.utf8).write(to: policy)
            return ["--consent-policy", policy.path]
        }

        @Test func inAppCaptureStreamsOnlyTheAppsOwnWindows() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon(Self.allowExampleApp(in: fixture))
            // Another client's window, green, beside the app's blue one; the demo scene fills the rest.
            let other = try fixture.startApp(["--colour", "green", "--geometry", "700,100,400,300", "--no-protect", "--stay", "60"])
            defer { other.process.terminate() }
            #expect(other.waitForJSONLine { $0["event"] as? String == "window" } != nil, "\(other.outputSoFar)")

            let app = try fixture.startApp(["--colour", "blue", "--geometry", "100,100,400,300", "--no-protect",
                                            "--share-frames", "20", "--share-fps", "60"])
            let result = app.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog)")
            let shared = try #require(result.jsonLines.first { $0["event"] as? String == "shared" }, "\(result)")
            let colours = try #require(shared["colours"] as? [String: Int])
            #expect(shared["frames"] as? Int == 20)
            // 20 frames, a sample every 8 pixels: the blue window shows up, the green one never,
            // and nothing of the demo scene's coloured bars does either.
            #expect((colours["blue"] ?? 0) > 20 * 1000, "\(colours)")
            #expect(colours["green"] == 0, "another client's window leaked: \(colours)")
            let total = colours.values.reduce(0, +)
            #expect(Double(colours["other"] ?? 0) < 0.01 * Double(total), "\(colours)")
        }

        @Test func aProtectedWindowIsBlackInARecordingWhileTheRestIsIntact() throws {
            let fixture = try ReplayFixture()
            defer { fixture.stop() }
            try fixture.startDaemon()
            let secret = try fixture.startApp(["--colour", "red", "--geometry", "200,200,480,320", "--stay", "60"])
            defer { secret.process.terminate() }
            #expect(secret.waitForJSONLine { $0["event"] as? String == "protected" } != nil, "\(secret.outputSoFar)")
            let open = try fixture.startApp(["--colour", "green", "--geometry", "1000,200,480,320", "--no-protect", "--stay", "60"])
            defer { open.process.terminate() }
            #expect(open.waitForJSONLine { $0["event"] as? String == "window" } != nil)

            let movie = fixture.file("protected.mp4")
            let result = try fixture.replay(["record", "--duration", "4", "--output", movie.path])
            #expect(result.status == 0, "\(result)")
            for time in [0.5, 2.0, 3.5] {
                let frame = try DecodedFrame(movie, at: time, width: 1920, height: 1080)
                let black = frame.blackFraction(x: 204, y: 204, width: 472, height: 312)
                #expect(black > 0.99, "protected window at \(time) s is only \(black * 100)% black")
                let centre = frame.pixel(x: 1240, y: 360)
                #expect(centre.g > 200 && centre.r < 60 && centre.b < 60, "unprotected window at \(time) s shows \(centre)")
                // The demo scene around them is drawn as usual, not blacked out.
                #expect(frame.blackFraction(x: 0, y: 600, width: 1920, height: 480) < 0.9)
            }
        }

        @Test func captureStateChangesArriveOncePerTransitionInOrder() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.allowExampleApp(in: fixture))
            let watcher = try fixture.startApp(["--no-protect", "--geometry", "0,0,200,200", "--stay", "60"])
            defer { watcher.process.terminate() }
            #expect(watcher.waitForJSONLine { $0["event"] as? String == "captureState" } != nil, "\(watcher.outputSoFar)")

            // The person records; then another app captures its own window.
            let recording = try fixture.replay(["record", "--duration", "2"])
            #expect(recording.status == 0, "\(recording)")
            Thread.sleep(forTimeInterval: 0.5)
            let other = try fixture.startApp(["--no-protect", "--geometry", "300,0,200,200", "--share-frames", "5"]).finish(timeout: 30)
            #expect(other.status == 0, "\(other)")
            Thread.sleep(forTimeInterval: 0.5)

            let states = watcher.jsonLines.filter { $0["event"] as? String == "captureState" }.map { $0["reasons"] as? [String] ?? ["?"] }
            #expect(states == [[], ["screenRecording"], [], ["inAppCapture"], []], "\(states)")
        }

        @Test func theConsentPageInChromiumAllowsOrDeclines() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let agent = try fixture.startConsentAgent(["--json"])
            defer { agent.process.terminate() }
            let browser = try HeadlessBrowser()
            defer { browser.stop() }

            for (answer, expectAllowed) in [("#allow", true), ("#deny", false)] {
                let app = try fixture.startApp(["--no-protect", "--geometry", "0,0,200,200", "--share-frames", "3"])
                let request = try #require(agent.waitForJSONLine(timeout: 30) { line in
                    Self.consentPrompt(line).map { prompt in
                        !agent.jsonLines.contains { Self.resolvedID($0) == prompt["requestID"] as? String }
                    } ?? false
                }, "agent saw: \(agent.outputSoFar)\n\(fixture.daemonLog)")
                let prompt = try #require(Self.consentPrompt(request))
                let url = try #require(prompt["pageURL"] as? String)
                let page = try browser.open(url)
                let text = try page.text()
                // An in-app capture: the page asks for the app's own windows, not the screen.
                #expect(text.contains("secret-notes") && text.contains("its own windows") && !text.contains("the screen"), "\(text)")
                try page.click(answer)
                try page.waitUntil("document.getElementById('result') !== null")
                let result = app.finish(timeout: 30)
                if expectAllowed {
                    #expect(result.status == 0, "\(result)")
                    #expect(result.jsonLines.contains { $0["event"] as? String == "shared" && $0["frames"] as? Int == 3 }, "\(result)")
                } else {
                    #expect(result.status == 3, "\(result)")
                    #expect(result.jsonLines.contains { $0["event"] as? String == "error" && $0["code"] as? String == "userDeclined" },
                            "\(result)")
                }
            }
        }

        @Test func anAppsReplayIsPreviewedByThePersonWhoCanWatchSaveAndDeleteIt() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.allowExampleApp(in: fixture))
            let agent = try fixture.startConsentAgent(["--json"])
            defer { agent.process.terminate() }

            let app = try fixture.startApp(["--no-protect", "--geometry", "0,0,200,200", "--record", "2"]).finish(timeout: 30)
            #expect(app.status == 0, "\(app)")
            let id = try #require(app.jsonLines.first { $0["event"] as? String == "recorded" }?["id"] as? String, "\(app)")
            #expect(app.jsonLines.contains { $0["event"] as? String == "previewShown" }, "\(app)")
            #expect(!app.stdout.contains("token=") && !app.stdout.contains(fixture.store.path), "the app saw the page or the store")

            let offer = try #require(agent.waitForJSONLine { ($0["previewOffered"] as? [String: Any]) != nil }, "\(agent.outputSoFar)")
            let url = try #require(((offer["previewOffered"] as? [String: Any])?["offer"] as? [String: Any])?["pageURL"] as? String)
            let browser = try HeadlessBrowser()
            defer { browser.stop() }
            let page = try browser.open(url)
            // The browser decodes and plays the movie at the display's size.
            try page.waitUntil("(() => { const v = document.getElementById('movie'); return v.readyState >= 2 && v.videoWidth === 640 })()")
            let href = try #require(try page.evaluate("document.getElementById('save').href") as? String)
            #expect(!href.contains("token="), "\(href)")
            // Save from a page of the person's own, in curl: a fresh one-time link, exchanged for the page's cookie.
            let saved = fixture.file("saved.mp4"), jar = fixture.file("cookies").path
            let link = try fixture.replay(["recordings", "preview", id]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(try fixture.run(Command.which("curl"), ["-s", "-f", "-o", "/dev/null", "-c", jar, link]).status == 0)
            let download = try fixture.run(Command.which("curl"), ["-s", "-f", "-o", saved.path, "-b", jar, href])
            #expect(download.status == 0, "\(download)")
            #expect(try MediaProbe(saved).video?.codec == "h264")

            try page.click("#delete")
            try page.waitUntil("document.getElementById('result') !== null")
            let listed = try fixture.replay(["recordings", "list", "--json"])
            #expect(!listed.stdout.contains(id), "\(listed)")
            #expect(try Self.httpStatus(url, fixture: fixture, user: nil) == "404")

            // An app may throw away its own replay, and nobody else's.
            let discarding = try fixture.startApp(["--no-protect", "--geometry", "0,0,200,200", "--record", "1", "--discard"])
                .finish(timeout: 30)
            let discarded = try #require(discarding.jsonLines.first { $0["event"] as? String == "discarded" }?["id"] as? String,
                                         "\(discarding)")
            #expect(!(try fixture.replay(["recordings", "list", "--json"]).stdout.contains(discarded)))
            #expect(fixture.storedMovies().isEmpty)
        }

        @Test func anAppOfAnotherUserCannotReachTheStoreFramesOrPreviews() throws {
            #expect(ServiceUser(named: "replayd") != nil, "the 'replayd' user is missing: run scripts/install-deps")
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false),
                                            socketName: "run/replayd.sock")
            defer { fixture.stop() }
            try fixture.startDaemon(["--system"])
            let status = try fixture.replay(["status", "--json"])
            let statusJSON = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any], "\(status)")
            #expect(statusJSON["mode"] as? String == "system")
            #expect(statusJSON["store"] as? String == fixture.store.path)

            let recorded = try fixture.replay(["record", "--duration", "1", "--json"])
            #expect(recorded.status == 0, "\(recorded)\n\(fixture.daemonLog)")
            let id = try #require((try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any])?["id"] as? String)
            let movie = fixture.store.appendingPathComponent("\(id).mp4").path

            // The store's files: not even their names.
            let list = try fixture.run("/usr/bin/ls", [fixture.store.path], user: "nobody")
            #expect(list.status != 0 && list.stderr.contains("Permission denied"), "\(list)")
            let read = try fixture.run("/usr/bin/cat", [movie], user: "nobody")
            #expect(read.status != 0 && read.stdout.isEmpty, "\(read.status) \(read.stderr)")
            // The daemon: no listing, no export, even through the person's own CLI.
            let listed = try fixture.run(ReplayFixture.replay, ["recordings", "list", "--socket", fixture.socket], user: "nobody")
            #expect(listed.status != 0 && listed.stderr.contains("apps cannot list"), "\(listed)")
            let exported = try fixture.run(ReplayFixture.replay, ["recordings", "export", id, "--to", "/tmp/stolen-\(id).mp4",
                                                                  "--socket", fixture.socket], user: "nobody")
            #expect(exported.status != 0 && exported.stderr.contains("apps cannot export"), "\(exported)")
            #expect(!FileManager.default.fileExists(atPath: "/tmp/stolen-\(id).mp4"))
            // No frames without consent (nobody is there to ask).
            let capture = try fixture.startApp(["--no-protect", "--share-frames", "1"], user: "nobody").finish(timeout: 30)
            #expect(capture.status == 3 && capture.stdout.contains("userDeclined"), "\(capture)")

            // The preview page: only with the token the person got.
            let url = try fixture.replay(["recordings", "preview", id]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(url.contains("token="), "\(url)")
            let withoutToken = String(url[..<url.range(of: "?token=")!.lowerBound])
            #expect(try Self.httpStatus(withoutToken, fixture: fixture, user: "nobody") == "404")
            #expect(try Self.httpStatus(withoutToken + "?token=" + String(repeating: "0", count: 32), fixture: fixture, user: "nobody") == "404")
            #expect(try Self.httpStatus(withoutToken + "/movie", fixture: fixture, user: "nobody") == "404")
            #expect(try Self.httpStatus(url, fixture: fixture, user: nil) == "200")
        }

        @Test func outOfOrderRequestsGetAClearErrorAndAClosedConnection() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            try fixture.startDaemon()
            for request in [ClientRequest.stopCapture, .stopRecording, .answerConsent(requestID: "consent-1", allow: true)] {
                let channel = try MessageChannel.connect(path: fixture.socket)
                try channel.send(request)
                let reply = try #require(try channel.receive(DaemonEvent.self))
                guard case .error(let code, let message) = reply.message else {
                    Issue.record("\(request) got \(reply.message)")
                    continue
                }
                #expect(code == .outOfOrder, "\(message)")
                #expect(try channel.receive(DaemonEvent.self) == nil, "the connection stays open after \(request)")
            }
            // An app may not act as the person's consent agent either.
            let agent = try MessageChannel.connect(path: fixture.socket)
            try agent.send(ClientRequest.registerConsentAgent)
            guard case .error(.notPermitted, _)? = try agent.receive(DaemonEvent.self)?.message else {
                Issue.record("an app registered as consent agent")
                return
            }
            #expect(try fixture.replay(["status"]).status == 0)
        }

        static func consentPrompt(_ line: [String: Any]) -> [String: Any]? {
            (line["consentRequested"] as? [String: Any])?["prompt"] as? [String: Any]
        }

        static func resolvedID(_ line: [String: Any]) -> String? {
            (line["consentResolved"] as? [String: Any])?["requestID"] as? String
        }

        static func httpStatus(_ url: String, fixture: ReplayFixture, user: String?) throws -> String {
            try fixture.run(Command.which("curl"), ["-s", "-o", "/dev/null", "-w", "%{http_code}", url], user: user)
                .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }
}
