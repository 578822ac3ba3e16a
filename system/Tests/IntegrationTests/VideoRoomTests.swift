import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// The `videoroom` upload extension in a real call: Debian's Janus with a VideoRoom room,
    /// the extension joining it as a participant from its sandbox under a real replayd, and
    /// three participants in headless Chromium, each through Janus's own JavaScript client.
    @Suite struct VideoRoom {
        static func installExtension(in fixture: ReplayFixture) throws -> [String] {
            let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Sources/Extensions/VideoRoom/videoroom.json")
            let directory = fixture.file("extensions")
            try ExtensionInstall.install(try JSONDecoder().decode(ExtensionManifest.self, from: Data(contentsOf: source)), in: directory)
            return ["--extensions-dir", directory.path]
        }

        /// Listens to the page's received sound (Web Audio) and counts beeps: a rise from
        /// quiet to loud, as the demo scene's 50 ms tone once a second makes.
        static let installEar = """
            (() => {
              if (window.ear) return true;
              const ear = window.ear = { beeps: 0, loud: false, peak: 0 };
              const video = document.querySelector('video');
              const listen = () => {
                const track = video.srcObject && video.srcObject.getAudioTracks()[0];
                if (!track) return setTimeout(listen, 100);
                const context = new AudioContext();
                const analyser = context.createAnalyser();
                analyser.fftSize = 1024;
                context.createMediaStreamSource(new MediaStream([track])).connect(analyser);
                const samples = new Float32Array(analyser.fftSize);
                setInterval(() => {
                  analyser.getFloatTimeDomainData(samples);
                  let sum = 0;
                  for (const sample of samples) sum += sample * sample;
                  const level = Math.sqrt(sum / samples.length);
                  ear.peak = Math.max(ear.peak, level);
                  if (!ear.loud && level > 0.05) { ear.loud = true; ear.beeps++; }
                  if (ear.loud && level < 0.01) ear.loud = false;
                }, 10);
              };
              listen();
              return true;
            })()
            """

        /// One participant: it sees the screen (decoded frames rising, the white flash played)
        /// and hears the beep.
        static func expectSeesAndHears(_ page: HeadlessBrowser.Page, label: String) throws {
            try page.waitUntil("window.call && window.call.pc !== null", timeout: 30)
            try WebRTC.expectMediaFlows(page, connection: "window.call.pc", label: label)
            _ = try page.evaluate(installEar)
            let before = try page.evaluate("window.ear.beeps") as? Int ?? 0
            try page.waitUntil("window.ear.beeps >= \(before + 2)", timeout: 15)
        }

        /// A number in the broadcast's service info (what `replay broadcast status` shows).
        static func info(_ fixture: ReplayFixture, _ key: String) -> Int? {
            Int(((try? Broadcast.latestStatus(fixture)) ?? nil)?["serviceInfo"].flatMap { $0 as? [String: String] }?[key] ?? "")
        }

        /// Frames decoded so far on a page.
        static func frames(_ page: HeadlessBrowser.Page) throws -> Int {
            try WebRTC.counters(page, "window.call.pc").frames
        }

        @Test func threeParticipantsSeeAndHearTheScreenAtTheServersRateAcrossARestartAndSeeItLeave() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let janus = try JanusServer(in: fixture.directory, roomBitrate: 256_000)
            defer { janus.close() }
            try fixture.startDaemon(Self.installExtension(in: fixture))
            let browser = try HeadlessBrowser()
            defer { browser.stop() }
            let page = try janus.participantPage(display: "Screen")
            let participants = try (0..<3).map { _ in try browser.open(page) }
            for participant in participants {
                try participant.waitUntil("window.call && window.call.joins === 1", timeout: 20)
            }

            // The pin is a secret: from a file, never on the command line.
            let start = try fixture.replay(["broadcast", "start", "--extension", "videoroom", "--setup", "url=\(janus.url)",
                                            "--setup", "room=\(janus.room)", "--setup", "pin=@\(try Upload.secretFile(janus.pin, in: fixture))",
                                            "--setup", "display=Screen", "--json"])
            try #require(start.status == 0, "\(start)\n\(fixture.daemonLog)")
            let published = try Broadcast.waitForStatus(fixture, timeout: 30) { ($0["serviceInfo"] as? [String: String])?["janus"] == "published" }
            try #require((published?["serviceInfo"] as? [String: String])?["janus"] == "published",
                         "\(String(describing: published))\n\(fixture.daemonLog)\n\(janus.log.suffix(2000))")
            #expect(!fixture.daemonLog.contains(janus.pin) && !janus.log.contains(janus.pin), "the pin was logged")
            for (index, participant) in participants.enumerated() {
                try Self.expectSeesAndHears(participant, label: "participant \(index + 1)")
                #expect(try participant.evaluate("window.call.publisherName") as? String == "Screen")
            }
            // The server's estimate (REMB, from the room's cap of 256 kbit/s) holds the rate
            // below the extension's start of 1500.
            let estimate = poll(timeout: 15) { Self.info(fixture, "serverEstimateKbps").flatMap { $0 <= 256 ? $0 : nil } }
            #expect(estimate != nil, "the estimate is \(String(describing: Self.info(fixture, "serverEstimateKbps")))")
            let held = poll(timeout: 5) { Self.info(fixture, "videoKbps").flatMap { $0 <= 256 ? $0 : nil } }
            #expect(held != nil, "the rate is \(String(describing: Self.info(fixture, "videoKbps")))")

            let during = try #require(try Broadcast.latestStatus(fixture))
            #expect(during["state"] as? String == "live", "\(during)")
            let peak = during["extensionPeakMemory"] as? Int ?? 0
            #expect(peak > 0 && peak < 50 * 1024 * 1024, "extension peak memory \(peak)")

            // The server dies and comes back: the extension joins again, and the participants
            // (who join again too, as a call's page does) see the screen once more.
            // It comes back with a cap of 2 Mbit/s: the rate grows to follow.
            janus.stop()
            janus.roomBitrate = 2_000_000
            try janus.start()
            let rejoined = try Broadcast.waitForStatus(fixture, timeout: 30) {
                ($0["serviceInfo"] as? [String: String])?["joins"] == "2" && ($0["serviceInfo"] as? [String: String])?["janus"] == "published"
            }
            #expect((rejoined?["serviceInfo"] as? [String: String])?["joins"] == "2", "\(String(describing: rejoined))\n\(fixture.daemonLog)")
            #expect(rejoined?["state"] as? String == "live", "\(String(describing: rejoined))")
            for (index, participant) in participants.enumerated() {
                try participant.waitUntil("window.call.joins >= 2 && window.call.pc !== null", timeout: 30)
                let before = try Self.frames(participant)
                try participant.waitUntil("(async () => (await (\(WebRTC.inbound("window.call.pc"))))[0] > \(before + 20))()", timeout: 30)
                #expect(try Self.frames(participant) > before, "participant \(index + 1) after the restart")
            }

            let raised = poll(timeout: 30) { Self.info(fixture, "videoKbps").flatMap { $0 >= 500 ? $0 : nil } }
            #expect(raised != nil, "after the cap was raised the rate is \(String(describing: Self.info(fixture, "videoKbps")))")
            print("videoroom: estimate \(estimate ?? 0) kbit/s held the rate at \(held ?? 0); after the restart with a higher cap, "
                  + "\(raised ?? 0) kbit/s (estimate \(Self.info(fixture, "serverEstimateKbps") ?? 0))")

            // The broadcast's stop takes the publisher out of the room for everyone.
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            for (index, participant) in participants.enumerated() {
                try participant.waitUntil("window.call.publisherSeen && !window.call.publisherPresent", timeout: 15)
                #expect(try participant.evaluate("window.call.publisherPresent") as? Bool == false, "participant \(index + 1)")
            }
            let final = try #require(try Broadcast.latestStatus(fixture))
            #expect(final["state"] as? String == "finished", "\(final)\n\(fixture.daemonLog)")
        }

        /// The example call app shares its own window into the call: the picker comes with the
        /// `videoroom` extension, the app's scope and the call's server and room filled in; the
        /// person types the pin; the participant sees the app's green window and never the
        /// demo scene's flash around it; the app's end takes it out of the room.
        @Test func theCallAppSharesOnlyItsOwnWindowIntoTheRoomThroughThePicker() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let janus = try JanusServer(in: fixture.directory)
            defer { janus.close() }
            try fixture.startDaemon(Self.installExtension(in: fixture))
            let agent = try fixture.startConsentAgent(["--json"])
            defer { agent.process.terminate(grace: 2) }
            let app = try fixture.start(VirtualDesktop.siblingExecutable("call-share").path, [
                "--server", janus.url, "--room", String(janus.room), "--name", "Ana's notes", "--colour", "00ff00",
                "--geometry", "0,0,320,240", "--seconds", "8", "--socket", fixture.socket,
            ])
            let offer = try #require(agent.waitForJSONLine { $0["pickerOffered"] != nil }, "\(agent.outputSoFar)\n\(app.outputSoFar)")
            let url = try #require(((offer["pickerOffered"] as? [String: Any])?["offer"] as? [String: Any])?["pageURL"] as? String)
            let browser = try HeadlessBrowser()
            defer { browser.stop() }
            let picker = try browser.open(url)
            #expect(try picker.evaluate("document.getElementById('scope').dataset.scope") as? String == "app")
            #expect(try picker.evaluate("document.querySelectorAll('input[name=extension]').length") as? Int == 1)
            // The app filled in the call; the pin is the person's to type.
            #expect(try picker.evaluate("document.getElementById('setup-videoroom-url').value") as? String == janus.url)
            #expect(try picker.evaluate("document.getElementById('setup-videoroom-room').value") as? String == String(janus.room))
            #expect(try picker.evaluate("document.getElementById('setup-videoroom-display').value") as? String == "Ana's notes")
            #expect(try picker.evaluate("document.getElementById('setup-videoroom-pin').value") as? String == "")
            let participant = try browser.open(try janus.participantPage(display: "Ana's notes"))
            _ = try picker.evaluate("document.getElementById('setup-videoroom-pin').value = \(String(reflecting: janus.pin))")
            try picker.click("#start")
            try picker.waitUntil("document.getElementById('result') !== null && document.getElementById('result').textContent === 'Live'",
                                 timeout: 30)

            try participant.waitUntil("window.call && window.call.pc !== null", timeout: 30)
            _ = try participant.evaluate(WebRTC.installProbe)
            try participant.waitUntil("(async () => (await (\(WebRTC.inbound("window.call.pc"))))[0] > 30)()", timeout: 30)
            #expect(try participant.evaluate("window.call.publisherName") as? String == "Ana's notes")
            // The app's window (0,0 320x240 on the 640x480 screen), green below its white band;
            // black everywhere else; and the scene's full-screen white flash never.
            try InAppBroadcast.expectOnlyTheAppsGreenWindow(participant, inside: [(100, 150), (30, 120), (280, 200)],
                                                            outside: [(400, 300), (600, 40), (320, 460), (500, 100)])

            let result = app.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog)")
            let calls = result.jsonLines.compactMap { $0["call"] as? String }
            #expect(calls.contains("published"), "\(result.stdout)")
            try participant.waitUntil("window.call.publisherSeen && !window.call.publisherPresent", timeout: 15)
        }

        /// A wrong pin is refused by the room: the broadcast ends at once with Janus's reason,
        /// and is not retried.
        @Test func aWrongPinEndsTheBroadcastWithTheRoomsRefusal() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            let janus = try JanusServer(in: fixture.directory)
            defer { janus.close() }
            try fixture.startDaemon(Self.installExtension(in: fixture))
            _ = try fixture.replay(["broadcast", "start", "--extension", "videoroom", "--setup", "url=\(janus.url)",
                                    "--setup", "room=\(janus.room)", "--setup", "pin=@\(try Upload.secretFile("wrong", in: fixture))", "--json"])
            let ended = try Broadcast.waitForStatus(fixture, timeout: 20) { $0["state"] as? String == "failed" }
            let error = ended?["lastError"] as? String ?? ""
            #expect(ended?["state"] as? String == "failed", "\(String(describing: ended))\n\(fixture.daemonLog)")
            #expect(error.contains("room \(janus.room)") && error.contains("433"), "\(error)")
        }
    }
}
