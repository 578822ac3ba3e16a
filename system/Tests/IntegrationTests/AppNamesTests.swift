import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// Issue 47: an app is named as the desktop names it, by the `.desktop` entry installed for
    /// the executable the kernel reports, with that path beside the name.
    @Suite struct AppNames {
        /// The person's own entry for the example app ($XDG_DATA_HOME/applications), as a menu editor writes one.
        static func installEntry(in fixture: ReplayFixture) throws {
            let applications = try #require(fixture.environment()["XDG_DATA_HOME"]).appending("/applications")
            try FileManager.default.createDirectory(atPath: applications, withIntermediateDirectories: true)
            try Data("""
                [Desktop Entry]
                Type=Application
                Name=Secret Notes
                Icon=accessories-text-editor
                Exec="\(ReplayFixture.secretNotes)" --stay 60
                """.utf8).write(to: URL(fileURLWithPath: applications + "/secret-notes.desktop"))
        }

        @Test func theConsentPromptNamesTheAppByItsDesktopEntryBesideItsPath() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            try Self.installEntry(in: fixture)
            try fixture.startDaemon()
            let agent = try fixture.startConsentAgent()
            defer { agent.process.terminate() }
            let app = try fixture.startApp(["--record", "1", "--geometry", "0,0,200,200"])
            defer { app.process.terminate() }
            let prompt = agent.waitForErrors(containing: "wants to capture")
            #expect(prompt?.contains("Secret Notes: \(ReplayFixture.secretNotes) (process \(app.process.pid)") == true,
                    "\(prompt ?? agent.errorsSoFar)\n\(fixture.daemonLog.suffix(1000))")
        }

        /// What it would capture, as it is: an in-app capture asks for the app's own windows,
        /// not the screen (and a grant of those is not one for the screen).
        @Test func anInAppCapturesPromptAsksForTheAppsOwnWindowsOnly() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let agent = try fixture.startConsentAgent()
            defer { agent.process.terminate() }
            let app = try fixture.startApp(["--share-frames", "5", "--geometry", "0,0,200,200"])
            defer { app.process.terminate() }
            let prompt = agent.waitForErrors(containing: "wants to capture")
            #expect(prompt?.contains("wants to capture its own windows.") == true, "\(prompt ?? agent.errorsSoFar)")
        }

        @Test func theNotificationNamesTheAppByItsDesktopEntry() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            let server = try NotificationServer(display: try #require(fixture.desktop?.environment["DISPLAY"]))
            defer { server.stop() }
            try Self.installEntry(in: fixture)
            let policy = fixture.file("policy.json")
            try JSONSerialization.data(withJSONObject: ["default": "deny", "apps": [ReplayFixture.secretNotes: "allow"]] as [String: Any])
                .write(to: policy)
            try fixture.startDaemon(["--consent-policy", policy.path], environment: ["DBUS_SESSION_BUS_ADDRESS": server.busAddress])
            let app = try fixture.startApp(["--record", "2", "--geometry", "0,0,200,200"])
            defer { app.process.terminate() }
            let shown = poll(timeout: 20, every: 0.1) { server.shown.first { $0.summary == "Recording the screen" } }
            #expect(shown?.body == "Secret Notes is recording your screen.", "\(server.shown)\n\(fixture.daemonLog.suffix(1000))")
        }
    }
}
