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
    /// Issue 27, item 3: with one consent an app started 40 recordings at once (replayd 142 →
    /// 412 MB) and clip buffers of 4 GiB each with no total, and could fill the store's disk.
    @Suite struct QuotaAttacks {
        /// A policy that lets this test process capture without asking anyone.
        static func allowThisProcess(in fixture: ReplayFixture) throws -> [String] {
            let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            let policy = fixture.file("policy.json")
            try Data(#"{"default": "deny", "apps": {"\#(executable)": "allow"}}"#.utf8).write(to: policy)
            return ["--consent-policy", policy.path]
        }

        static let small = RecordingOptions(fps: 10, appAudio: false)

        @Test func anAppGetsFourCapturesAtOnceAndThePersonStillRecords() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.allowThisProcess(in: fixture))
            var connections: [RawClient.Connection] = []
            var started = 0, refused: [String] = []
            for _ in 0..<6 {
                let connection = try RawClient.Connection(socket: fixture.socket, client: "quota-attack")
                try connection.send(.startRecording(options: Self.small))
                let answer = connection.answer(containing: ["recordingStarted", "\"error\""])
                if answer.contains("recordingStarted") { started += 1 } else { refused.append(answer) }
                connections.append(connection)
            }
            #expect(started == 4, "\(started) started; refused: \(refused)\n\(fixture.daemonLog)")
            #expect(refused.count == 2 && refused.allSatisfy { $0.contains("quotaExceeded") && $0.contains("already runs 4 captures") }, "\(refused)")
            // An in-app capture takes a place too.
            let capture = try RawClient.Connection(socket: fixture.socket, client: "quota-attack")
            try capture.send(.startCapture(options: CaptureOptions(fps: 5)))
            #expect(capture.answer(containing: ["captureStarted", "\"error\""]).contains("quotaExceeded"))

            // The person's own recording is counted apart.
            let person = try fixture.replay(["record", "--duration", "1", "--json"])
            #expect(person.status == 0, "\(person)")

            // Once the app's recordings end, it may record again.
            connections.removeAll()
            let again = try #require(poll(timeout: 20, every: 0.2) { () -> String? in
                guard let connection = try? RawClient.Connection(socket: fixture.socket, client: "quota-attack") else { return nil }
                try? connection.send(.startRecording(options: Self.small))
                let answer = connection.answer(containing: ["recordingStarted", "\"error\""])
                return answer.contains("recordingStarted") ? answer : nil
            }, "\(fixture.daemonLog)")
            #expect(again.contains("recordingStarted"))
        }

        @Test func clipBuffersTogetherHoldAtMostAQuarterOfTheMachinesMemory() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.allowThisProcess(in: fixture))
            let quarter = sysconf(Int32(_SC_PHYS_PAGES)) * sysconf(Int32(_SC_PAGESIZE)) / 4
            let budget = 4 << 30
            var connections: [RawClient.Connection] = []
            var answers: [String] = []
            for _ in 0..<3 {
                let connection = try RawClient.Connection(socket: fixture.socket, client: "quota-attack")
                try connection.send(.startClipBuffering(options: Self.small, length: 60, byteBudget: budget))
                answers.append(connection.answer(containing: ["clipBufferingStarted", "\"error\""]))
                connections.append(connection)
            }
            let started = answers.filter { $0.contains("clipBufferingStarted") }.count
            #expect(started == min(3, quarter / budget), "\(started) of 3 started, a quarter of memory is \(quarter): \(answers)")
            let refusals = answers.filter { !$0.contains("clipBufferingStarted") }
            #expect(!refusals.isEmpty && refusals.allSatisfy { $0.contains("quotaExceeded") && $0.contains("a quarter of this machine's memory") },
                    "\(refusals)")
            // A small budget still fits beside them.
            let modest = try RawClient.Connection(socket: fixture.socket, client: "quota-attack")
            try modest.send(.startClipBuffering(options: Self.small, length: 10, byteBudget: 16 << 20))
            #expect(modest.answer(containing: ["clipBufferingStarted", "\"error\""]).contains("clipBufferingStarted"))
        }

        @Test func anAppsRecordingStopsBeforeTheDiskIsFullAndIsKept() throws {
            let disk = try SmallDisk(megabytes: 40)
            defer { disk.remove() }
            let fixture = try ReplayFixture(storeDirectory: disk.mountPoint.appendingPathComponent("store"))
            defer { fixture.stop() }
            try fixture.startDaemon(Self.allowThisProcess(in: fixture))
            // Apps leave a twentieth of the disk (2 MB here); 4 MB are left when the app starts.
            try disk.fill(leaving: 4_000_000)

            let app = try RawClient.Connection(socket: fixture.socket, client: "quota-attack")
            var options = RecordingOptions(fps: 30, appAudio: false)
            options.video.bitRate = 8_000_000
            try app.send(.startRecording(options: options))
            let answer = app.answer(containing: ["recordingFinished"], timeout: 60)
            #expect(answer.contains("recordingStarted") && answer.contains("recordingFinished"), "\(answer)\n\(fixture.daemonLog)")
            #expect(answer.contains("apps' recordings leave"), "\(answer)")
            // Stopped with room to spare: nothing else on the disk ran out of space.
            #expect(disk.freeBytes > 1_000_000, "\(disk.freeBytes) bytes left")
            let movie = try #require(fixture.storedMovies().first)
            let probe = try MediaProbe(movie)
            #expect((probe.video?.packets ?? 0) > 0, "the app's recording was not kept")

            // The next one is refused before it starts; the person's still starts.
            let next = try RawClient.Connection(socket: fixture.socket, client: "quota-attack")
            try next.send(.startRecording(options: options))
            let refused = next.answer(containing: ["recordingStarted", "\"error\""])
            #expect(refused.contains("quotaExceeded") && refused.contains("apps' recordings leave"), "\(refused)")
            let person = try fixture.replay(["record", "--duration", "1", "--json"])
            #expect(person.status == 0, "\(person)")
        }
    }
}
