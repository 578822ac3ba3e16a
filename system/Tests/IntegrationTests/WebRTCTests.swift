import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// The `webrtc` upload extension, run by a real replayd in its bubblewrap sandbox, watched
    /// and answered by Debian's headless Chromium: local viewers over WHEP, and publishing to a
    /// WHIP endpoint on loopback.
    @Suite struct WebRTC {
        /// Installs the extension's own manifest (Sources/Extensions/WebRTC/webrtc.json) with the
        /// built executable; returns the daemon arguments that point at it.
        static func installExtension(in fixture: ReplayFixture) throws -> [String] {
            let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Sources/Extensions/WebRTC/webrtc.json")
            let directory = fixture.file("extensions")
            try ExtensionInstall.install(try JSONDecoder().decode(ExtensionManifest.self, from: Data(contentsOf: source)), in: directory)
            return ["--extensions-dir", directory.path]
        }

        /// Samples the page's <video> into a small canvas every 15 ms and keeps the brightest
        /// and darkest mean luma seen, so a test can tell the demo scene's white flash arrived.
        static let installProbe = """
            (() => {
              if (window.probe) return true;
              const canvas = document.createElement('canvas');
              canvas.width = 32; canvas.height = 24;
              const context = canvas.getContext('2d', { willReadFrequently: true });
              const probe = window.probe = { maxLuma: 0, minLuma: 255, samples: 0 };
              setInterval(() => {
                const video = document.querySelector('video');
                if (!video || video.readyState < 2 || !video.videoWidth) return;
                context.drawImage(video, 0, 0, 32, 24);
                const data = context.getImageData(0, 0, 32, 24).data;
                let sum = 0;
                for (let i = 0; i < data.length; i += 4) sum += 0.299 * data[i] + 0.587 * data[i + 1] + 0.114 * data[i + 2];
                const luma = sum / (data.length / 4);
                probe.maxLuma = Math.max(probe.maxLuma, luma);
                probe.minLuma = Math.min(probe.minLuma, luma);
                probe.samples++;
              }, 15);
              return true;
            })()
            """

        /// The receiving connection's inbound-rtp counters: [framesDecoded, audio packetsReceived].
        static func inbound(_ connection: String) -> String {
            """
            (async () => {
              const report = await \(connection).getStats();
              let frames = 0, audio = 0;
              report.forEach(entry => {
                if (entry.type !== 'inbound-rtp') return;
                if (entry.kind === 'video') frames = entry.framesDecoded || 0;
                if (entry.kind === 'audio') audio = entry.packetsReceived || 0;
              });
              return [frames, audio];
            })()
            """
        }

        static func counters(_ page: HeadlessBrowser.Page, _ connection: String) throws -> (frames: Int, audio: Int) {
            let pair = try page.evaluate(inbound(connection)) as? [Any] ?? []
            return ((pair.first as? Int) ?? 0, (pair.last as? Int) ?? 0)
        }

        /// Checks one receiving page: decoded frames and audio packets keep rising, the
        /// played picture shows the flash, and playback quality counts frames too.
        static func expectMediaFlows(_ page: HeadlessBrowser.Page, connection: String, label: String) throws {
            _ = try page.evaluate(installProbe)
            try page.waitUntil("(async () => (await (\(inbound(connection))))[0] > 0)()", timeout: 30)
            let first = try counters(page, connection)
            try page.waitUntil("(async () => { const c = await (\(inbound(connection))); return c[0] > \(first.frames + 20) && c[1] > \(first.audio + 20); })()",
                               timeout: 30)
            let later = try counters(page, connection)
            #expect(later.frames > first.frames && later.audio > first.audio, "\(label): \(first) then \(later)")
            let played = try page.evaluate("document.querySelector('video').getVideoPlaybackQuality().totalVideoFrames") as? Int ?? 0
            #expect(played > 0, "\(label): the video element played no frames")
            // The demo scene flashes white once a second; the scene between flashes is darker.
            try page.waitUntil("window.probe.maxLuma > 200 && window.probe.minLuma < 150", timeout: 15)
        }

        /// The HTTP status `curl` gets for `method` on `url` ("000" when it cannot connect).
        static func httpStatus(_ method: String, _ url: String) throws -> String {
            var arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "-X", method]
            if method == "POST" { arguments += ["-H", "Content-Type: application/sdp", "--data-binary", "v=0\r\n"] }
            return try Command.run(Command.which("curl"), arguments + [url]).stdout
        }

        /// The viewer page and its WHEP endpoint answer only under the broadcast's random
        /// token: without it, or with another, everything is 404.
        static func expectOnlyTheTokenOpensTheViewer(_ url: String) throws {
            let parsed = try #require(URL(string: url), "\(url)")
            let components = parsed.pathComponents.filter { $0 != "/" }
            let token = components.first ?? ""
            #expect(components.count == 1 && token.count == 32 && token.allSatisfy(\.isHexDigit) && url.hasSuffix("/\(token)/"),
                    "the viewer URL has no 128-bit token: \(url)")
            let origin = "http://127.0.0.1:\(try #require(parsed.port))"
            let other = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let refused = [("GET", "/"), ("GET", "/index.html"), ("POST", "/whep"), ("GET", "/whep"), ("DELETE", "/whep/1"),
                           ("GET", "/\(other)/"), ("POST", "/\(other)/whep"), ("DELETE", "/\(other)/whep/1"),
                           ("GET", "/\(token.dropLast())/"), ("POST", "/\(token.uppercased())/whep"), ("GET", "/whep/\(token)/")]
            for (method, path) in refused {
                #expect(try httpStatus(method, origin + path) == "404", "\(method) \(path) without the token")
            }
            #expect(try httpStatus("GET", url) == "200")
        }

        @Test func twoViewersWatchTheBroadcastInChromiumWithVideoTheFlashAndAudio() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.installExtension(in: fixture))
            let start = try fixture.replay(["broadcast", "start", "--extension", "webrtc", "--setup", "viewer-port=auto", "--json"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog)")
            let live = try #require(try Broadcast.waitForStatus(fixture) { ($0["broadcastURL"] as? String)?.hasPrefix("http://127.0.0.1:") == true },
                                    "\(fixture.daemonLog)")
            let url = try #require(live["broadcastURL"] as? String, "\(live)")
            try Self.expectOnlyTheTokenOpensTheViewer(url)

            let browser = try HeadlessBrowser()
            defer { browser.stop() }
            let viewers = try (0..<2).map { _ in try browser.open(url) }
            for (index, page) in viewers.enumerated() {
                try page.waitUntil("window.viewer && window.viewer.state === 'connected'", timeout: 30)
                #expect(try page.evaluate("window.viewer.error") == nil)
                try Self.expectMediaFlows(page, connection: "window.viewer.pc", label: "viewer \(index + 1)")
            }
            // Both at once, still rising after the second one joined.
            for (index, page) in viewers.enumerated() {
                let before = try Self.counters(page, "window.viewer.pc")
                try page.waitUntil("(async () => (await (\(Self.inbound("window.viewer.pc"))))[0] > \(before.frames + 10))()", timeout: 20)
                #expect(try Self.counters(page, "window.viewer.pc").frames > before.frames, "viewer \(index + 1)")
            }
            let during = try #require(try Broadcast.latestStatus(fixture))
            #expect(during["state"] as? String == "live", "\(during)")
            #expect((during["serviceInfo"] as? [String: String])?["viewers"] == "2", "\(during)")
            let peak = during["extensionPeakMemory"] as? Int ?? 0
            #expect(peak > 0 && peak < 50 * 1024 * 1024, "extension peak memory \(peak)")

            // A viewer that leaves (its page's DELETE) ends only its own session.
            _ = try viewers[0].evaluate("(() => { window.dispatchEvent(new Event('pagehide')); return true; })()")
            let one = try Broadcast.waitForStatus(fixture) { ($0["serviceInfo"] as? [String: String])?["viewers"] == "1" }
            #expect((one?["serviceInfo"] as? [String: String])?["viewers"] == "1", "\(String(describing: one))")
            let before = try Self.counters(viewers[1], "window.viewer.pc")
            try viewers[1].waitUntil("(async () => (await (\(Self.inbound("window.viewer.pc"))))[0] > \(before.frames + 10))()", timeout: 20)

            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            let final = try #require(try Broadcast.latestStatus(fixture))
            #expect(final["state"] as? String == "finished", "\(final)\n\(fixture.daemonLog)")
        }

        /// A receiving page for the WHIP endpoint: Chromium answers the extension's offer.
        static let installAnswerer = """
            (() => {
              const video = document.createElement('video');
              video.autoplay = true; video.muted = true; video.playsInline = true;
              document.body.appendChild(video);
              const stream = new MediaStream();
              video.srcObject = stream;
              window.answerOffer = async offer => {
                const pc = window.receiver = new RTCPeerConnection();
                pc.ontrack = event => stream.addTrack(event.track);
                await pc.setRemoteDescription({ type: 'offer', sdp: offer });
                await pc.setLocalDescription(await pc.createAnswer());
                if (pc.iceGatheringState !== 'complete') {
                  await new Promise(resolve => {
                    pc.addEventListener('icegatheringstatechange', () => { if (pc.iceGatheringState === 'complete') resolve(); });
                    setTimeout(resolve, 2000);
                  });
                }
                return pc.localDescription.sdp;
              };
              return true;
            })()
            """

        @Test func publishingToAWHIPEndpointGets201MediaFlowsAndStoppingDeletesTheSession() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.installExtension(in: fixture))
            let token = "whip-test-\(UUID().uuidString)"
            let endpoint = try WHIPTestEndpoint(token: token)
            defer { endpoint.stop() }
            let browser = try HeadlessBrowser()
            defer { browser.stop() }
            let page = try browser.open(endpoint.pageURL)
            _ = try page.evaluate(Self.installAnswerer)
            endpoint.answer { offer in
                let literal = String(decoding: try JSONEncoder().encode(offer), as: UTF8.self)
                guard let answer = try page.evaluate("answerOffer(\(literal))", timeout: 15) as? String else {
                    throw WHIPTestEndpoint.Failure(description: "Chromium made no answer")
                }
                return answer
            }

            let start = try fixture.replay(["broadcast", "start", "--extension", "webrtc", "--setup", "whip-url=\(endpoint.url)",
                                            "--setup", "token=@\(try Upload.secretFile(token, in: fixture))", "--json"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog)")
            let post = try #require(endpoint.waitForRequest { $0.method == "POST" }, "\(fixture.daemonLog)")
            #expect(post.status == 201, "\(post)")
            #expect(post.contentType?.hasPrefix("application/sdp") == true)
            #expect(post.authorization == "Bearer \(token)")
            // What the offer promises browsers: H.264 in packetization mode 1 with NACK and PLI, and Opus.
            #expect(post.body.contains("H264/90000") && post.body.contains("packetization-mode=1"), "\(post.body)")
            #expect(post.body.contains("nack pli") && post.body.contains("a=rtcp-fb:") && post.body.contains("OPUS/48000/2"), "\(post.body)")
            #expect(post.body.contains("a=sendonly") && post.body.contains("a=candidate:"), "\(post.body)")

            try page.waitUntil("window.receiver && window.receiver.connectionState === 'connected'", timeout: 30)
            try Self.expectMediaFlows(page, connection: "window.receiver", label: "WHIP receiver")
            let live = try #require(try Broadcast.latestStatus(fixture))
            #expect(live["state"] as? String == "live", "\(live)")
            #expect(endpoint.requests.allSatisfy { $0.method != "DELETE" })

            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            let delete = try #require(endpoint.waitForRequest(timeout: 10) { $0.method == "DELETE" }, "\(endpoint.requests.map(\.method))")
            #expect(delete.path == "/whip/session/1" && delete.status == 200, "\(delete)")
            let final = try #require(try Broadcast.latestStatus(fixture))
            #expect(final["state"] as? String == "finished", "\(final)")
            #expect(!fixture.daemonLog.contains(token), "the bearer token was logged")
        }

        @Test func aWrongTokenEndsTheBroadcastWithAClearError() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.installExtension(in: fixture))
            let endpoint = try WHIPTestEndpoint(token: "the-right-token")
            defer { endpoint.stop() }
            endpoint.answer { _ in throw WHIPTestEndpoint.Failure(description: "never asked") }
            let wrong = "a-wrong-token-\(UUID().uuidString)"
            let start = try fixture.replay(["broadcast", "start", "--extension", "webrtc", "--setup", "whip-url=\(endpoint.url)",
                                            "--setup", "token=@\(try Upload.secretFile(wrong, in: fixture))"])
            #expect(start.status == 0 || start.stderr.contains("401"), "\(start)")
            let final = try #require(try Broadcast.waitForStatus(fixture) { ["finished", "failed"].contains($0["state"] as? String ?? "") })
            #expect(final["state"] as? String == "failed", "\(final)")
            let error = final["lastError"] as? String ?? ""
            #expect(error.contains("401") && error.contains("token"), "\(final)")
            #expect(!error.contains(wrong), "the token is in the error: \(error)")
            #expect(!fixture.daemonLog.contains(wrong), "the bearer token was logged")
            let post = try #require(endpoint.requests.first { $0.method == "POST" })
            #expect(post.status == 401 && post.authorization == "Bearer \(wrong)")
        }
    }
}
