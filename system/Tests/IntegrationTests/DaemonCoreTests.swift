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
    /// The daemon's own housekeeping, seen from outside: what a finished session leaves behind,
    /// and what clients that misbehave cost everyone else.
    @Suite struct DaemonCore {
        /// What the daemon holds right now, read from /proc.
        struct Holdings: Equatable, CustomStringConvertible {
            var descriptors: Int
            /// What each descriptor is (socket:[…], pipe, memfd, a file), to name a leak.
            var targets: [String]
            var surfaceMappings: Int
            var children: Int
            var threads: Int

            init(pid: Int32) {
                let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
                descriptors = fds.count
                targets = fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
                    .sorted()
                let maps = (try? String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)) ?? ""
                surfaceMappings = maps.split(separator: "\n").filter { $0.contains("openreplaykit-broadcast") }.count
                let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
                children = tasks.reduce(0) { total, task in
                    let listed = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? ""
                    return total + listed.split(separator: " ").count
                }
                threads = tasks.count
            }

            var description: String {
                "\(descriptors) descriptors, \(surfaceMappings) surface mappings, \(children) children, \(threads) threads"
            }
        }

        @Test func fiftyBroadcastsThatFailLeaveNothingBehind() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon(Broadcast.installExtensions(in: fixture))
            let pid = try #require(fixture.daemon?.pid)

            func cycle() throws {
                _ = try fixture.replay(["broadcast", "start", "--extension", "hostile", "--setup", "behaviour=finish-error"])
                let final = try Broadcast.waitUntilOver(fixture)
                #expect(final?["lastError"] as? String == "the extension ended the broadcast: the service refused the stream",
                        "\(final ?? [:])")
            }
            /// Waits for the last one to be released, and the last CLI connection to be closed (the
            /// status is final a moment before that).
            func settled(descriptors: Int? = nil) -> Holdings {
                poll(timeout: 10, every: 0.1) { () -> Holdings? in
                    let now = Holdings(pid: pid)
                    return now.surfaceMappings == 0 && now.children == 0 && (descriptors.map { now.descriptors <= $0 } ?? true)
                        ? now : nil
                } ?? Holdings(pid: pid)
            }
            // One first, so what the daemon sets up once (the extension catalog, the window-ownership
            // connection) is counted before; the mirroring probe connects to X on its first tick, 2 s in.
            try cycle()
            Thread.sleep(forTimeInterval: 2.5)
            let before = settled()
            for _ in 0..<50 { try cycle() }
            let after = settled(descriptors: before.descriptors)
            // Nothing left behind: no more descriptors than before. (One of the daemon's own that
            // closes meanwhile, as a pipe did once here, leaks nothing.)
            let new = after.targets.filter { !before.targets.contains($0) }
            #expect(after.descriptors <= before.descriptors,
                    "before: \(before); after: \(after); new: \(new); gone: \(before.targets.filter { !after.targets.contains($0) })")
            #expect(after.surfaceMappings == 0 && after.children == 0, "\(after)")

            // The history keeps the final status of the latest ones, and only those.
            let history = try Broadcast.status(fixture)
            #expect(history.count == 16, "\(history.count) statuses")
            #expect(history.allSatisfy { $0["state"] as? String == "failed" })
            let stop = try fixture.replay(["broadcast", "stop"])
            #expect(stop.status != 0 && stop.stderr.contains("no broadcast is running"), "\(stop)")
        }

        @Test func aWatcherThatNeverReadsStallsNobody() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon()
            // Asks for every capture-state change, then never reads one.
            let deaf = try MessageChannel.connect(path: fixture.socket)
            try deaf.send(ClientRequest.watchCaptureState)
            let listener = try MessageChannel.connect(path: fixture.socket)
            try listener.send(ClientRequest.watchCaptureState)
            for _ in 0..<20 {
                let recording = try fixture.replay(["record", "--duration", "0.2", "--json"])
                #expect(recording.status == 0, "\(recording)")
            }
            // The listener heard every change, in order: now, then on and off twenty times.
            var states: [Bool] = []
            while states.count < 41, let (event, _) = try listener.receive(DaemonEvent.self) {
                if case .captureState(let status) = event { states.append(status.isCaptured) }
            }
            #expect(states == [false] + Array(repeating: [true, false], count: 20).flatMap { $0 })
            _ = deaf
        }

        @Test func aThousandIdleConnectionsDoNotKeepThePersonOut() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let pid = try #require(fixture.daemon?.pid)
            var limit = rlimit()
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            limit.rlim_cur = max(limit.rlim_cur, min(limit.rlim_max, 4096))
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)

            var idle: [Int32] = []
            defer { idle.forEach { close($0) } }
            for _ in 0..<1100 { idle.append(try UnixSocket.connect(path: fixture.socket)) }

            // Past the cap for one user, a client is told why and let go.
            let refused = MessageChannel(fd: dup(idle.last!), limits: .events)
            let answer = try refused.receive(DaemonEvent.self)
            guard case .error(let code, let message)? = answer?.message else {
                Issue.record("no refusal: \(String(describing: answer))")
                return
            }
            #expect(code == .busy && message.contains("256 connections"), "\(message)")

            // The person's own tool is still served.
            let status = try fixture.replay(["status", "--json"], timeout: 10)
            #expect(status.status == 0, "\(status)")
            #expect(status.stdout.contains("\(pid)"), "\(status)")
            // Idle clients hold no thread of the daemon's.
            let holdings = Holdings(pid: pid)
            #expect(holdings.threads < 40, "\(holdings)")
        }

        /// The common open-file limit of 1,024, soft and hard, and 1,100 connections held by
        /// five users against the system daemon: past the apps' share of descriptors a client
        /// is told "busy" (never an EMFILE loop), the log stays small, and the person is served.
        @Test func elevenHundredConnectionsUnderAThousandDescriptors() throws {
            let fixture = try ReplayFixture(desktop: nil, socketName: "run/replayd.sock")
            defer { fixture.stop() }
            try fixture.startDaemon(["--system"], openFiles: 1024)
            let pid = try #require(fixture.daemon?.pid)
            let holders = try [0, 1, 2, 3, 65534].map { uid in
                try Command.start("/usr/bin/setpriv", ["--reuid", "\(uid)", "--regid", "\(uid)", "--clear-groups", "/usr/bin/python3", "-c", """
                    import socket, struct, time
                    held, busy = [], 0
                    for _ in range(220):
                        # Blocking, so a full backlog is waited for (5 s at most), not failed at once.
                        s = socket.socket(socket.AF_UNIX)
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 5, 0))
                        try:
                            s.connect(\(String(reflecting: fixture.socket))); held.append(s)
                        except OSError as error:
                            print("failed", error, flush=True)
                    time.sleep(1)
                    for s in held:
                        s.setblocking(False)
                        try:
                            if b"busy" in s.recv(4096): busy += 1
                        except OSError: pass
                    print("held", len(held), "busy", busy, flush=True)
                    time.sleep(600)
                    """])
            }
            defer { holders.forEach { $0.process.signal(SIGKILL); _ = $0.finish(timeout: 5) } }
            let counts = holders.map { holder in
                poll(timeout: 30, every: 0.1) { () -> (held: Int, busy: Int)? in
                    let words = holder.outputSoFar.split(whereSeparator: \.isWhitespace)
                    guard let at = words.firstIndex(of: "held"), words.count > at + 3 else { return nil }
                    return (Int(words[at + 1]) ?? 0, Int(words[at + 3]) ?? 0)
                }
            }
            #expect(counts.allSatisfy { $0?.held == 220 }, "\(holders.map(\.outputSoFar))")
            // 1,024 less the person's 64, the pages' 128 and the daemon's reserve: the rest of 1,100 were told busy.
            let busy = counts.compactMap { $0?.busy }.reduce(0, +)
            #expect(busy == 1100 - (1024 - 64 - 128 - 192), "\(busy) told busy")

            let status = try fixture.replay(["status", "--json"], timeout: 10)
            #expect(status.status == 0 && status.stdout.contains("\(pid)"), "\(status)")
            #expect(!fixture.daemonLog.contains("cannot accept"), "\(fixture.daemonLog.suffix(2000))")
            #expect(fixture.daemonLog.utf8.count < 4 << 20, "the log grew to \(fixture.daemonLog.utf8.count) bytes")
        }

        @Test(arguments: [["--owner", "nosuchuser"], ["--owner", "-5"], ["--owner", "4294967295"], ["--idle-exit", "0"],
                          ["--log-level", "loud"], ["--pages-port", "70000"]])
        func badArgumentsEndWithAMessageNotACrash(arguments: [String]) throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replayd-args-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let result = try Command.run(ReplayFixture.replayd, arguments + ["--socket", directory.appendingPathComponent("s.sock").path,
                                                                             "--store", directory.path])
            #expect(result.status == 64, "a usage error, not a trap: \(result)")
            #expect(result.stderr.contains("Error: "), "\(result)")
        }

        /// An idle daemon sleeps until something happens: no timer ticks, no thread polls. Its
        /// threads' context switches are counted over 20 s, after 5 s that hold the end of its
        /// start and its one settling (2 s after the readiness probe's connection). Before,
        /// libdispatch's pool monitor alone made 20 in such a window: it ticks once a second
        /// from the first task dispatch's pool ran.
        @Test func anIdleDaemonSleepsUntilSomethingHappens() async throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            try fixture.startDaemon(["--no-pages", "--no-notify"])
            let pid = try #require(fixture.daemon?.pid)
            try await Task.sleep(for: .seconds(5))
            let before = Self.contextSwitches(of: pid)
            try await Task.sleep(for: .seconds(20))
            let after = Self.contextSwitches(of: pid)
            // A thread that came meanwhile counts whole; one that went is not counted.
            let made = after.compactMap { id, thread -> String? in
                let count = thread.count - (before[id]?.count ?? 0)
                return count > 0 ? "\(thread.name) (\(id)): \(count)" : nil
            }
            let total = after.reduce(0) { $0 + $1.value.count - (before[$1.key]?.count ?? 0) }
            #expect(total <= 2, "context switches in 20 s: \(made.joined(separator: ", "))")
        }

        /// Each thread of `pid` by its id: its name, and its context switches so far (voluntary or not).
        static func contextSwitches(of pid: Int32) -> [String: (name: String, count: Int)] {
            var threads: [String: (name: String, count: Int)] = [:]
            for task in ProcFS.entries(of: "/proc/\(pid)/task") {
                guard let status = ProcFS.text("/proc/\(pid)/task/\(task)/status") else { continue }
                let name = ProcFS.text("/proc/\(pid)/task/\(task)/comm")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
                let count = status.split(separator: "\n")
                    .filter { $0.hasPrefix("voluntary_ctxt_switches:") || $0.hasPrefix("nonvoluntary_ctxt_switches:") }
                    .compactMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }
                    .reduce(0, +)
                threads[task] = (name, count)
            }
            return threads
        }

        /// A pages port of the person's choosing is bound as replayd starts (the pages are a
        /// service of their own, started on first use otherwise): one already taken ends replayd
        /// at once, saying which, instead of failing the first consent page later.
        @Test func aPagesPortAlreadyTakenEndsReplaydAtItsStartSayingWhy() throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replayd-port-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let taken = try LoopbackPort.listen()
            defer { close(taken.fd) }
            let result = try Command.run(ReplayFixture.replayd, ["--pages-port", "\(taken.port)", "--no-notify",
                                                                 "--socket", directory.appendingPathComponent("s.sock").path,
                                                                 "--store", directory.path], timeout: 30)
            #expect(result.status != 0, "\(result)")
            #expect(result.stderr.contains("cannot listen on 127.0.0.1:\(taken.port)") && result.stderr.contains("in use"), "\(result)")
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("s.sock").path), "its socket was left behind")
        }

        /// An extension looks at what it was handed before it opened anything: its standard
        /// streams and its connection, and none of replayd's sockets, listeners or event queues.
        @Test func anExtensionInheritsNothingButItsConnection() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon(Broadcast.installExtensions(in: fixture))
            // Loopback pages listening too: the listener an extension once inherited.
            _ = try fixture.replay(["status", "--json"])
            let start = try fixture.replay(["broadcast", "start", "--extension", "hostile", "--setup", "behaviour=descriptors"])
            #expect(start.status == 0, "\(start)")
            let status = try Broadcast.waitForStatus(fixture) { ($0["serviceInfo"] as? [String: String])?["inherited"] != nil }
            let inherited = ((status?["serviceInfo"] as? [String: String])?["inherited"] ?? "").split(separator: " ").map(String.init)
            let beyondStreams = inherited.filter { (Int($0.prefix { $0 != "=" }) ?? 0) > 2 }
            #expect(beyondStreams.count == 1 && beyondStreams.first?.hasPrefix("3=socket:") == true, "inherited: \(inherited)")
            _ = try fixture.replay(["broadcast", "stop"])
        }

        /// An extension that writes 20 MB to its standard error and tries to rewind the log:
        /// the daemon's log keeps its history and grows by a few lines a second.
        @Test func anExtensionCannotRewriteOrFloodTheDaemonsLog() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon(Broadcast.installExtensions(in: fixture))
            // The daemon logs that it listens just after its socket is bound: wait for that line.
            let before = poll(timeout: 10, every: 0.05) { fixture.daemonLog.contains("replayd listening") ? fixture.daemonLog : nil }
                ?? fixture.daemonLog
            #expect(before.contains("replayd listening"))
            let start = try fixture.replay(["broadcast", "start", "--extension", "hostile", "--setup", "behaviour=stderr-flood"])
            #expect(start.status == 0, "\(start)")
            _ = try Broadcast.waitForStatus(fixture, timeout: 60) { ($0["serviceInfo"] as? [String: String])?["flooded"] == "yes" }
            _ = try fixture.replay(["broadcast", "stop"])
            _ = try Broadcast.waitUntilOver(fixture)
            let after = fixture.daemonLog
            #expect(after.hasPrefix(before), "the log's history is intact")
            #expect(after.utf8.count - before.utf8.count < 200_000, "grew by \(after.utf8.count - before.utf8.count) bytes")
            #expect(after.contains("lines of its output were not logged"))
        }

        /// Another user gets to where the person's socket goes first: makes the folder and
        /// listens there, keeping whatever arrives. The CLI sends it nothing, and neither
        /// replayd nor the CLI will make a socket in that folder.
        @Test func aSocketFolderAnotherUserMadeIsNeverUsed() throws {
            let base = FileManager.default.temporaryDirectory.appendingPathComponent("ork-squat-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o1777])
            defer { try? FileManager.default.removeItem(at: base) }
            let folder = base.appendingPathComponent("openreplaykit")
            let socket = folder.appendingPathComponent("replayd.sock").path
            let caught = folder.appendingPathComponent("caught").path
            let made = try Command.run("/usr/sbin/runuser", ["-u", "nobody", "--", "mkdir", "-m", "0777", folder.path])
            #expect(made.status == 0, "\(made)")
            let squatter = try Command.start("/usr/sbin/runuser", ["-u", "nobody", "--", "python3", "-c", """
                import socket
                s = socket.socket(socket.AF_UNIX); s.bind(\(String(reflecting: socket))); s.listen(4)
                c, _ = s.accept(); c.settimeout(5)
                data = b""
                try:
                    while chunk := c.recv(65536): data += chunk
                except Exception: pass
                open(\(String(reflecting: caught)), "wb").write(data)
                """])
            defer { _ = squatter.finish(timeout: 1) }
            _ = poll(timeout: 10, every: 0.05) { FileManager.default.fileExists(atPath: socket) ? true : nil }

            let status = try Command.run(ReplayFixture.replay, ["status", "--socket", socket])
            #expect(status.status != 0, "\(status)")
            #expect(status.stderr.contains("uid 65534") && status.stderr.contains("nothing was sent"), "\(status)")
            _ = squatter.finish(timeout: 10)
            let received = FileManager.default.contents(atPath: caught)
            #expect(received?.isEmpty == true, "the squatter received \(received?.count ?? -1) bytes")

            // With the folder there and nobody listening: refused, not used, by the daemon and the CLI alike.
            try? FileManager.default.removeItem(atPath: socket)
            let daemon = try Command.run(ReplayFixture.replayd, ["--socket", socket, "--store", base.appendingPathComponent("store").path])
            #expect(daemon.status != 0 && daemon.stderr.contains("belongs to uid 65534"), "\(daemon)")
            let cli = try Command.run(ReplayFixture.replay, ["status", "--socket", socket])
            #expect(cli.status != 0 && cli.stderr.contains("belongs to uid 65534"), "\(cli)")
        }
    }
}
