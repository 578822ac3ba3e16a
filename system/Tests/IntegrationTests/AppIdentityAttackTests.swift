import Foundation
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// An app's name comes from `/proc/PID/exe`, a path in the app's own mount namespace: in a
    /// namespace of its own it can bind any program over any path. A consent policy that allows
    /// a path must not allow whatever stands there in somebody's namespace.
    @Suite struct AppIdentityAttacks {
        @Test func aProgramBoundOverAnAllowedPathInItsOwnNamespaceIsNotAllowed() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            // The policy lets the example app capture without asking anyone.
            try fixture.startDaemon(Privacy.allowExampleApp(in: fixture) + ["--consent-timeout", "3"])
            let allowed = try fixture.startApp(["--no-protect", "--share-frames", "1"]).finish(timeout: 30)
            try #require(allowed.status == 0 && allowed.stdout.contains("\"shared\""), "the allowed app itself: \(allowed)")

            // The attacker's own program, a copy standing in for anything that speaks the protocol,
            // bound over the allowed path in a user and mount namespace of its own.
            let impostor = fixture.file("impostor").path
            try FileManager.default.copyItem(atPath: ReplayFixture.secretNotes, toPath: impostor)
            let script = """
                exec unshare -Urm sh -c 'mount --bind "$0" "$1" && exec "$1" --no-protect --share-frames 1 --socket "$2"' \
                '\(impostor)' '\(ReplayFixture.secretNotes)' '\(fixture.socket)'
                """
            let attack = try Command.run("/bin/sh", ["-c", script], environment: fixture.environment(), timeout: 60)
            #expect(attack.status == 3 && attack.stdout.contains("userDeclined"), "the impostor captured: \(attack)")
            #expect(!attack.stdout.contains("\"shared\""), "\(attack)")
            // The log names it by what it is.
            let declined = fixture.daemonLog.split(separator: "\n").filter { $0.contains("capture declined") }
            #expect(declined.contains { $0.contains("[in a namespace of its own: device ") }, "\(declined)")
        }
    }
}
