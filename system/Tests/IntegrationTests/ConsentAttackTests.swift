import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
    /// Issue 27, item 3: an app that asks again and again. It left 100 prompts waiting for the
    /// person, and `consent-agent --open` started a browser for each at once and reaped none.
    @Suite struct ConsentAttacks {
        @Test func anAppAskingOverAndOverGetsFewPromptsAndTheAgentOpensOnePageAtATime() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon(["--consent-timeout", "6"])
            // A browser that takes a moment, and logs when it starts and ends.
            let log = fixture.file("browser.log")
            let browser = fixture.file("browser.sh")
            try "#!/bin/sh\necho start >> '\(log.path)'\nsleep 0.5\necho end >> '\(log.path)'\n".write(to: browser, atomically: true, encoding: .utf8)
            chmod(browser.path, 0o755)
            let agent = try fixture.startConsentAgent(["--open"], environment: ["BROWSER": browser.path])
            defer { agent.process.terminate() }

            // Eight requests at once from the same user's apps; nobody answers.
            let apps = try (0..<8).map { _ in try fixture.startApp(["--no-protect", "--geometry", "0,0,100,100", "--share-frames", "1"]) }
            let results = apps.map { $0.finish(timeout: 60) }
            let refused = results.filter { $0.stdout.contains("quotaExceeded") || $0.stderr.contains("already waiting for the person") }
            let declined = results.filter { $0.stdout.contains("userDeclined") }
            #expect(refused.count == 4 && declined.count == 4, "refused \(refused.count), declined \(declined.count): \(results.map(\.stdout))")

            // One browser at a time: its log alternates, and every one ran to its end.
            let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map(String.init)
            #expect(lines.count == 8, "\(lines)")
            #expect(lines == Array(repeating: ["start", "end"], count: lines.count / 2).flatMap { $0 }, "browsers overlapped: \(lines)")
            // And none is left a zombie of the agent.
            let agentPID = agent.process.pid
            let zombies = try FileManager.default.contentsOfDirectory(atPath: "/proc").filter { $0.allSatisfy(\.isNumber) }.filter { pid in
                guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
                return status.contains("PPid:\t\(agentPID)\n") && status.contains("State:\tZ")
            }
            #expect(zombies.isEmpty, "zombies of the agent: \(zombies)")
        }
    }
}
