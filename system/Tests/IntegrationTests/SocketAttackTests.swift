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
    /// Issue 27: what anyone who can reach replayd's socket, or the folder it lives in, can do
    /// to the person's daemon and log.
    @Suite struct SocketAttacks {
        /// Item 2: another user's 1,100 idle TCP connections to the loopback pages (their port is
        /// in `replay status`) took every descriptor replayd had at `ulimit -n 1024`: the person's
        /// `replay record` failed, and none was ever closed. The pages hold at most their share
        /// (the rest wait unaccepted in the kernel), and close connections that send nothing.
        @Test func aFloodOfIdleConnectionsToThePagesLeavesThePersonServed() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon(openFiles: 1024)
            let status = try fixture.replay(["status", "--json"])
            let pages = try #require(status.jsonLines.first?["pagesURL"] as? String, "\(status)")
            let port = try #require(pages.split(separator: ":").last.flatMap { Int($0) }, "\(pages)")
            let daemon = try #require(fixture.daemon?.pid)
            let flood = try Command.start("/usr/bin/setpriv", ["--reuid", "65534", "--regid", "65534", "--clear-groups", "/usr/bin/python3", "-c", """
                import errno, resource, select, socket, time
                resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
                held = []
                for _ in range(1100):
                    s = socket.socket()
                    s.setblocking(False)
                    s.connect_ex(("127.0.0.1", \(port)))
                    held.append(s)
                time.sleep(2)
                print("opened", len(held), flush=True)
                time.sleep(12)
                closed = 0
                for s in held:
                    try:
                        if s.recv(1) == b"": closed += 1
                    except OSError as error:
                        if error.errno != errno.EAGAIN: closed += 1
                print("closed", closed, flush=True)
                time.sleep(600)
                """])
            defer { flood.process.signal(SIGKILL); _ = flood.finish(timeout: 5) }
            try #require(poll(timeout: 30, every: 0.1) { flood.outputSoFar.contains("opened 1100") ? true : nil } != nil, "\(flood.outputSoFar)")
            let cpuBefore = try Self.cpuSeconds(daemon)
            let record = try fixture.replay(["record", "--duration", "1", "--no-notify"], timeout: 60)
            #expect(record.status == 0, "the person could not record during the flood: \(record)\n\(fixture.daemonLog.suffix(1500))")
            Thread.sleep(forTimeInterval: 2)
            let cpu = try Self.cpuSeconds(daemon) - cpuBefore
            // A recording of a second is well under a second of CPU; spinning on EMFILE was most of a core.
            #expect(cpu < 2, "replayd used \(cpu) s of CPU during the flood")
            let closed = poll(timeout: 30, every: 0.2) { () -> Int? in
                let words = flood.outputSoFar.split { $0.isWhitespace }
                return words.firstIndex(of: "closed").flatMap { words.count > $0 + 1 ? Int(words[$0 + 1]) : nil }
            }
            // Those it accepted and that said nothing are closed; the rest never took a descriptor.
            #expect((closed ?? 0) >= 100, "idle connections closed: \(closed.map(String.init) ?? "none")")
            let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon)/fd").count) ?? 0
            #expect(open < 1024 - 64, "replayd holds \(open) descriptors")
            // The pages answer again.
            let page = try Command.run(Command.which("curl"), ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30", pages + "/"])
            #expect(page.status == 0 && !page.stdout.isEmpty && page.stdout != "000", "\(page)")
        }

        /// User plus system CPU seconds a process has used.
        static func cpuSeconds(_ pid: Int32) throws -> Double {
            let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
            return Double((Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }

        /// Item 4: every malformed request was a warning of its own, so a client filled the system
        /// log as fast as it could connect (20,000 requests, 8.5 MB in 14 s).
        @Test func aFloodOfMalformedRequestsAddsAFewLinesToTheLogAndCountsTheRest() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            // The level replayd runs at (the fixture's debug level logs every connection).
            try fixture.startDaemon(["--log-level", "info"])
            let linesBefore = Self.lines(fixture.daemonLog)

            let flood = 5_000
            for round in 0..<flood {
                // Half are not frames at all (a header announcing 2 GiB), half frame something that is not a request.
                let json = Array(#"{"launchMissiles":\#(round)}"#.utf8)
                let bytes = round % 2 == 0 ? [0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0] : FrameCodec.encodeHeader(jsonLength: json.count, bodyLength: 0) + json
                let reply = try RawClient.exchange(try UnixSocket.connect(path: fixture.socket), bytes: bytes)
                if round < 2 { #expect(reply.contains("malformedRequest"), "\(reply)") }
            }
            // One more after the last window has passed: its line counts the flood's tail.
            Thread.sleep(forTimeInterval: 1.2)
            _ = try RawClient.exchange(try UnixSocket.connect(path: fixture.socket), bytes: [0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0])

            let log = fixture.daemonLog
            let added = Self.lines(log) - linesBefore
            #expect(added < 200, "the flood added \(added) lines:\n\(log.suffix(2000))")
            let logged = log.components(separatedBy: "rejected a malformed request").count - 1
            let unsaid = try NSRegularExpression(pattern: #"\((\d+) more before it not logged\)"#)
                .matches(in: log, range: NSRange(log.startIndex..., in: log))
                .compactMap { Range($0.range(at: 1), in: log).flatMap { Int(log[$0]) } }
            #expect(!unsaid.isEmpty, "the log never says how many were not logged:\n\(log.suffix(2000))")
            #expect(logged + unsaid.reduce(0, +) == flood + 1, "\(logged) logged, \(unsaid.reduce(0, +)) counted")

            #expect(fixture.daemon?.isRunning == true)
            let status = try fixture.replay(["status"])
            #expect(status.status == 0, "\(status)")
        }

        /// Issue 26: each connection is a task that reads its next request only as it gets to it.
        /// An app whose request waits for the person's answer, and which floods requests behind
        /// it, fills its own socket and waits there: replayd holds a few of its frames, not all
        /// it sent, and serves everyone else; and a daemon asked to stop meanwhile ends that wait.
        @Test func requestsFloodedBehindOneThatWaitsStayInTheClientsOwnSocket() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon(["--consent-timeout", "120"])
            let daemon = try #require(fixture.daemon)
            let agent = try fixture.startReplay(["consent-agent"])
            defer { agent.process.terminate() }
            try #require(poll(timeout: 30, every: 0.1) { fixture.daemonLog.contains("consent agent registered") ? true : nil } != nil)

            let app = try RawClient.Connection(socket: fixture.socket)
            try app.send(.startRecording(options: RecordingOptions(appAudio: false)))
            #expect(app.answer(containing: ["waitingForConsent"]).contains("waitingForConsent"))
            let residentBefore = try Self.residentKilobytes(daemon.pid)
            // Requests as fast as the socket takes them, until it has taken none for a second
            // (or 64 MiB went: nothing pushed back).
            _ = fcntl(app.fd, F_SETFL, fcntl(app.fd, F_GETFL) | O_NONBLOCK)
            let frame = try RawClient.frame(.status)
            var flood: [UInt8] = []
            for _ in 0..<4096 { flood += frame }
            var written = 0
            var lastTaken = Date()
            while written < 64 << 20 && Date().timeIntervalSince(lastTaken) < 1 {
                let count = flood.withUnsafeBytes { send(app.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if count > 0 {
                    written += count
                    lastTaken = Date()
                } else {
                    usleep(10_000)
                }
            }
            #expect(written < 4 << 20, "replayd took \(written) bytes of requests queued behind one that waits")
            let grown = try Self.residentKilobytes(daemon.pid) - residentBefore
            #expect(grown < 8 << 10, "replayd grew by \(grown) KiB while a client flooded it")
            // Everyone else is served meanwhile.
            let status = try fixture.replay(["status"])
            #expect(status.status == 0, "\(status)")

            // Stopping ends the wait for the person's answer: the daemon exits cleanly, and the
            // app is told it is shutting down, not left waiting for the consent timeout.
            daemon.signal(SIGTERM)
            let exited = daemon.wait(timeout: 60)
            #expect(exited == 0, "replayd did not stop cleanly: \(String(describing: exited))\n\(fixture.daemonLog.suffix(1500))")
            _ = fcntl(app.fd, F_SETFL, fcntl(app.fd, F_GETFL) & ~O_NONBLOCK)
            #expect(app.answer(containing: ["shutting down"]).contains("replayd is shutting down"))
        }

        /// Resident memory of a process, KiB.
        static func residentKilobytes(_ pid: Int32) throws -> Int {
            let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
            return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        }

        /// Item 11: another user made the folder `replay` looks in for replayd's socket first (any
        /// user can, where the runtime folder is shared or once was). The folder is refused, rightly,
        /// but the person cannot remove it: replayd is started in a folder only the person can make.
        @Test func aSocketFolderAnotherUserSquatsIsPassedForOneOnlyThePersonCanMake() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            // A runtime folder private now but open when the squatter came: a second name in it.
            // One every user still shares: the person's state folder, in their home.
            for shared in [false, true] {
                let runtime = fixture.file(shared ? "shared-runtime" : "runtime")
                try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o1777])
                let squatted = runtime.appendingPathComponent("openreplaykit")
                let made = try Command.run("/usr/sbin/runuser", ["-u", SecretsAttacks.otherUser, "--", "mkdir", "-m", "0777", squatted.path])
                #expect(made.status == 0, "\(made)")
                if !shared { #expect(chmod(runtime.path, 0o700) == 0) }
                let fallback = shared ? fixture.file("state/openreplaykit/runtime") : runtime.appendingPathComponent("openreplaykit-\(geteuid())")

                // `replay status` with no socket named starts replayd where it looks.
                let status = try Command.run(ReplayFixture.replay, ["status"], environment: fixture.environment(["XDG_RUNTIME_DIR": runtime.path]),
                                             timeout: 60)
                let pid = status.stdout.firstMatch(of: /replayd pid (\d+)/).flatMap { pid_t($0.1) }
                defer { if let pid { Self.stopDaemon(pid) } }
                #expect(status.status == 0, "\(status)")
                #expect(pid != nil, "\(status)")
                #expect(status.stderr.contains("\(squatted.path) belongs to uid 65534 (\(SecretsAttacks.otherUser))")
                        && status.stderr.contains("sudo -u \(SecretsAttacks.otherUser) rm -r '\(squatted.path)'")
                        && status.stderr.contains("using \(fallback.path) instead"), "\(status)")
                #expect(FileManager.default.fileExists(atPath: fallback.appendingPathComponent("replayd.sock").path))
                #expect(try FileManager.default.contentsOfDirectory(atPath: squatted.path) == [], "the squatter's folder was written to")
            }
        }

        /// Ends a replayd that `replay` started (detached), and waits until it is gone.
        static func stopDaemon(_ pid: pid_t) {
            // Gone, or a zombie nobody reaps yet: replay, its parent, has exited.
            let gone = { (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)).map { $0.contains(") Z ") } ?? true }
            kill(pid, SIGTERM)
            if poll(timeout: 10, every: 0.05, { gone() ? true : nil }) == nil { kill(pid, SIGKILL) }
        }

        static func lines(_ text: String) -> Int { text.split(separator: "\n").count }
    }
}
