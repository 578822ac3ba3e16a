import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// KDE Plasma 5.27 (Debian 12): KWin's virtual backend and xdg-desktop-portal-kde. Without
    /// a GPU KWin sends no picture in a screen cast (WaylandDesktop+KDE.swift says why), so
    /// this proves what is replayd's on KDE: the portal's session, a restore token in KDE's
    /// own format, and the PipeWire negotiation with KWin's stream.
    @Suite struct KDECapture {
        @Test func replaydRecordsThroughTheKDEPortalWithTheRememberedChoiceAndAgainWithTheTokenItKept() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(compositor: .kde, width: 640, height: 480, audio: false))
            defer { fixture.stop() }
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path])
            let tokenKept = { (try? String(contentsOf: fixture.portalTokenFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) }
            let seeded = try #require(tokenKept())

            // KDE's dialog cannot even show here (no Plasma QML): the cast opens from the token or not at all.
            let first = try fixture.replay(["record", "--duration", "2", "--no-app-audio", "--output", fixture.file("kde.mp4").path],
                                           timeout: 60)
            #expect(first.status == 0, "\(first)\n\(fixture.daemonLog.suffix(2000))")
            // The size is the format KWin's stream agreed with replayd's.
            #expect(first.stderr.contains("at 640x480"), "\(first)")
            let status = try fixture.replay(["status", "--json"])
            #expect(status.stdout.contains("\"portal\""), "\(status)")

            // The token the portal answered with (xdg-desktop-portal 1.16 hands the same one back
            // when it was restored from) is what replayd keeps, and it opens the next recording.
            let kept = try #require(tokenKept())
            let second = try fixture.replay(["record", "--duration", "1", "--no-app-audio", "--output", fixture.file("again.mp4").path],
                                            timeout: 60)
            #expect(second.status == 0, "\(second)\n\(fixture.daemonLog.suffix(2000))")

            // Forgotten, the choice is asked for again: KDE's dialog fails to load here, and the
            // portal answers that sharing was declined. So the recordings above came from the token.
            #expect(try fixture.replay(["sources", "--forget"]).status == 0)
            let third = try fixture.replay(["record", "--duration", "1", "--no-app-audio"], timeout: 60)
            #expect(third.status != 0 && third.stderr.contains("declined"), "\(third)")

            let framesLine = first.stdout.split(separator: "\n").first { $0.hasPrefix("frames:") }
            let frames = framesLine.flatMap { Int($0.dropFirst("frames:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            print("KDE: token \(seeded.prefix(8))… then \(kept.prefix(8))…; \(frames) frames from KWin in 2 s")
            withKnownIssue("KWin 5.27 without a GPU (QPainter, virtual backend) never feeds a monitor's screen cast") {
                #expect(frames > 0, "KWin sent no picture")
            }
        }
    }
}
