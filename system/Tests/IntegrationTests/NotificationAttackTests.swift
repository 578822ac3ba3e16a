import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// Issue 27, item 6: every client of the session bus can send any signal, to everyone or
    /// straight to replayd's connection. Only the notification server that showed a capture's
    /// notification may stop it.
    @Suite struct NotificationAttacks {
        @Test func aForgedStopActionFromAnotherBusClientStopsNothing() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let server = try NotificationServer(display: try #require(fixture.desktop?.environment["DISPLAY"]))
            defer { server.stop() }
            try fixture.startDaemon(environment: ["DBUS_SESSION_BUS_ADDRESS": server.busAddress])

            let duration = 12.0
            let recording = try fixture.startReplay(["record", "--duration", "\(Int(duration))", "--json"])
            #expect(poll(timeout: 20, every: 0.1) { server.shown.first } != nil, "no notification\n\(fixture.daemonLog.suffix(1500))")
            let forged = try Self.forgeStop(on: server.busAddress)
            #expect(forged.status == 0, "\(forged)")
            #expect(forged.stdout.contains("unicast"), "no other connection on the bus to send to: \(forged)")

            // The forgeries are all out before status is asked: the recording still runs.
            let status = try IntegrationTests.Indicator.status(fixture)
            #expect((status["activeRecordings"] as? [String])?.count == 1, "the forged Stop stopped the recording: \(status)")
            let result = recording.finish(timeout: 30)
            #expect(result.status == 0, "\(result)")
            #expect(!fixture.daemonLog.contains("stopped from the desktop's notification"), "\(fixture.daemonLog.suffix(1500))")
            let movie = try #require(fixture.storedMovies().first)
            let kept = try #require(try MediaProbe(movie).duration)
            #expect(abs(kept - duration) <= 0.5, "the recording lasted \(kept) s of \(duration)")

            // The person's own click, through the server that showed the notification, still stops one.
            let started = Date()
            let second = try fixture.startReplay(["record", "--duration", "60", "--json"])
            #expect(poll(timeout: 20, every: 0.1) { server.shown.filter { $0.summary == "Recording the screen" }.count >= 2 ? true : nil } != nil,
                    "\(server.shown)")
            #expect(try Self.forgeStop(on: server.busAddress).status == 0)
            #expect(try server.invokeAction().status == 0)
            let stopped = second.finish(timeout: 30)
            #expect(stopped.status == 0, "\(stopped)")
            #expect(Date().timeIntervalSince(started) < 40, "the real Stop action did not stop the recording")
            #expect(fixture.daemonLog.contains("stopped from the desktop's notification"))
        }

        /// `ActionInvoked(N, "stop")` for N in 1…60 from a client of its own: broadcast, then sent
        /// straight to every other connection on the bus (replayd's among them).
        static func forgeStop(on bus: String) throws -> CommandResult {
            let script = """
                signal() { dbus-send --session --type=signal "$@" /org/freedesktop/Notifications \
                    org.freedesktop.Notifications.ActionInvoked uint32:$n string:stop; }
                names=$(dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
                    org.freedesktop.DBus.ListNames | grep -o '":[0-9.]*"' | tr -d '"')
                for n in $(seq 1 60); do
                    signal || exit 1
                    for name in $names; do signal --dest="$name" && echo "unicast $n $name"; done
                done
                exit 0
                """
            return try Command.run("/bin/sh", ["-c", script], environment: ["DBUS_SESSION_BUS_ADDRESS": bus, "PATH": "/usr/bin:/bin"], timeout: 120)
        }
    }
}
