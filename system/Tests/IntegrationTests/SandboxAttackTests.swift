import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
    /// A hostile upload extension, written as an attacker would write it, against a real
    /// replayd, bubblewrap and X server. Each attack must fail or end the broadcast, and
    /// nothing of the sandbox may be left afterwards.
    @Suite struct SandboxAttack {
        /// A daemon with the hostile extension installed, broadcasting with `behaviour`.
        /// `setup` adds settings once the daemon runs (it may need to know the daemon's ports).
        static func attack(_ behaviour: String, setup: (ReplayFixture) throws -> [String: String] = { _ in [:] })
            throws -> (fixture: ReplayFixture, extensionPath: String) {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            do {
                try fixture.startDaemon(Broadcast.installExtensions(in: fixture))
                let settings = try setup(fixture).sorted { $0.key < $1.key }.flatMap { ["--setup", "\($0.key)=\($0.value)"] }
                let start = try fixture.replay(["broadcast", "start", "--extension", "hostile", "--setup", "behaviour=\(behaviour)"]
                    + settings)
                // An attack that trips the watchdog inside broadcastStarted fails the start
                // itself; the broadcast's status says why either way.
                #expect(start.status == 0 || start.stderr.contains("cannot start the broadcast: the extension"),
                        "\(start)\n\(fixture.daemonLog.suffix(2000))")
            } catch {
                fixture.stop()
                throw error
            }
            // The extension runs from where it is installed, which is what /proc/PID/exe names.
            return (fixture, fixture.file("extensions/replay-hostile-extension").path)
        }

        static func serviceInfo(_ fixture: ReplayFixture, has key: String, timeout: Double = 20) throws -> [String: String] {
            let status = try Broadcast.waitForStatus(fixture, timeout: timeout) { ($0["serviceInfo"] as? [String: String])?[key] != nil }
            return status?["serviceInfo"] as? [String: String] ?? [:]
        }

        /// Ends the broadcast if it still runs; the sandbox must then be gone.
        static func expectNothingLeft(_ fixture: ReplayFixture, _ extensionPath: String) throws {
            if try Broadcast.latestStatus(fixture)?["state"] as? String == "live" { _ = try fixture.replay(["broadcast", "stop"]) }
            _ = try Broadcast.waitUntilOver(fixture)
            let left = sandboxLeftovers(running: extensionPath, timeout: 10)
            #expect(left.isEmpty, "still running: \(left)")
        }

        /// Ends with `expected` in the broadcast's error, the daemon unharmed, the sandbox gone.
        static func expectFailure(_ fixture: ReplayFixture, _ extensionPath: String, containing expected: String) throws {
            let final = try #require(try Broadcast.waitUntilOver(fixture, timeout: 30), "\(fixture.daemonLog.suffix(2000))")
            #expect(final["state"] as? String == "failed", "\(final)")
            #expect((final["lastError"] as? String ?? "").contains(expected), "\(final)")
            #expect(fixture.daemon?.isRunning == true)
            try expectNothingLeft(fixture, extensionPath)
        }

        /// The X server listens on an abstract socket in the host's network namespace; with
        /// its Xauthority-free session an extension could read the screen and type. In a
        /// namespace of its own (pasta) the socket is not there (ECONNREFUSED); sharing the
        /// host's, Landlock's scope refuses it (EPERM).
        @Test func anExtensionCannotConnectToTheXServersAbstractSocket() throws {
            let (fixture, path) = try Self.attack("x11")
            defer { fixture.stop() }
            let x11 = try Self.serviceInfo(fixture, has: "x11")["x11"] ?? ""
            let ownNetwork = FileManager.default.isExecutableFile(atPath: "/usr/bin/pasta") && access("/dev/net/tun", R_OK | W_OK) == 0
            let expected = ownNetwork ? "connect: ECONNREFUSED" : "connect: EPERM"
            #expect(x11 == expected, "the extension knocked on the X server: \(x11)")
            try Self.expectNothingLeft(fixture, path)
        }

        /// Every loopback TCP port was open to an extension: the pages of every user, any local
        /// service. It may connect to the port its setup's URL names (as to the tests' nginx),
        /// on loopback too, and to no other, though those listen.
        @Test func anExtensionConnectsOnlyToThePortItsSetupNames() throws {
            let named = try LoopbackPort.listen(), other = try LoopbackPort.listen()
            defer {
                close(named.fd)
                close(other.fd)
            }
            var pagesPort = 0
            let (fixture, path) = try Self.attack("loopback") { fixture in
                let status = try fixture.replay(["status", "--json"])
                let pages = try #require(status.jsonLines.first?["pagesURL"] as? String, "\(status)")
                pagesPort = try #require(pages.split(separator: ":").last.flatMap { Int($0) }, "\(pages)")
                return ["url": "rtmp://127.0.0.1:\(named.port)/live", "ports": "\(other.port),\(pagesPort)"]
            }
            defer { fixture.stop() }
            let info = try Self.serviceInfo(fixture, has: "proc-net-tcp")
            #expect(info["connect-\(named.port)"] == "ok", "the port its setup names: \(info)")
            #expect(info["connect-\(other.port)"] == "EACCES", "another loopback service: \(info)")
            #expect(info["connect-\(pagesPort)"] == "EACCES", "the daemon's pages: \(info)")
            #expect(info["io_uring"] == "EPERM", "io_uring, whose operations pass no seccomp filter: \(info)")
            // Its own network namespace (pasta): /proc/net lists none of the host's listeners. The
            // named port is listed: pasta listens on it inside, to forward it to the host's loopback.
            for port in [other.port, pagesPort] {
                #expect(info["listed-\(port)"] == "no", "/proc/net/tcp lists the host's port \(port): \(info)")
            }
            // Landlock does not see these two (they reached the other service before seccomp refused them).
            for port in [other.port, pagesPort] {
                #expect(info["fastopen-\(port)"] == "EPERM", "sendto with MSG_FASTOPEN: \(info)")
                #expect(info["mptcp-\(port)"] == "socket: EPERM", "a Multipath TCP socket: \(info)")
            }
            try Self.expectNothingLeft(fixture, path)
        }

        /// A fixture for a daemon run as the system daemon is (`--system`): its store and, beside
        /// it, its state in a folder of /var/tmp (outside /tmp, which the sandbox replaces anyway,
        /// as the real /var/lib/openreplaykit is), which the caller removes once the fixture stops.
        static func systemFixture() throws -> (fixture: ReplayFixture, base: URL) {
            let base = URL(fileURLWithPath: "/var/tmp/ork-test-state-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
            do {
                let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false),
                                                storeDirectory: base.appendingPathComponent("recordings"), socketName: "run/replayd.sock")
                return (fixture, base)
            } catch {
                try? FileManager.default.removeItem(at: base)
                throw error
            }
        }

        /// System mode: the daemon keeps the portal's restore token in its state folder, which
        /// its own user may read, and extensions run as that user. The sandbox hides the state
        /// as it hides the store. (Kept outside /tmp, which the sandbox replaces anyway, as
        /// the real /var/lib/openreplaykit/state is.)
        @Test func aSystemDaemonsExtensionCannotReadItsRestoreToken() throws {
            let replayd = try #require(ServiceUser(named: "replayd"), "the 'replayd' user is missing: run scripts/install-deps")
            let (fixture, base) = try Self.systemFixture()
            defer {
                fixture.stop()
                try? FileManager.default.removeItem(at: base)
            }
            try fixture.startDaemon(["--system"] + Broadcast.installExtensions(in: fixture))
            // The token as the daemon leaves it: its user's, mode 0600, in its 0700 state folder.
            let token = base.appendingPathComponent("state/screencast-token")
            try Data("restore-token-of-the-persons-screen\n".utf8).write(to: token)
            #expect(chown(token.path, replayd.uid, replayd.gid) == 0 && chmod(token.path, 0o600) == 0)
            let readable = try fixture.run("/usr/bin/cat", [token.path], user: "replayd")
            try #require(readable.status == 0, "the daemon's own user reads its token outside the sandbox: \(readable)")

            let start = try fixture.replay(["broadcast", "start", "--extension", "hostile", "--setup", "behaviour=read",
                                            "--setup", "path=\(token.path)"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog.suffix(2000))")
            let read = try Self.serviceInfo(fixture, has: "read")["read"] ?? ""
            #expect(read.hasPrefix("no: "), "the extension read the daemon's restore token: \(read)")
            try Self.expectNothingLeft(fixture, fixture.file("extensions/replay-hostile-extension").path)
        }

        /// ptrace and process_vm_readv/writev, on the sandbox's init, on a child of its own and
        /// on itself, and an x32 system call: all refused by the seccomp filter.
        @Test func anExtensionCannotTraceOrReadAnotherProcesssMemory() throws {
            let (fixture, path) = try Self.attack("ptrace")
            defer { fixture.stop() }
            let info = try Self.serviceInfo(fixture, has: "vm-read-self")
            for key in ["ptrace-init", "ptrace-child", "vm-read-init", "vm-read-self", "vm-write-self", "x32"] {
                #expect(info[key] == "EPERM", "\(key): \(info[key] ?? "no answer")")
            }
            try Self.expectNothingLeft(fixture, path)
        }

        /// 2,000 MB written into /tmp: the tmpfs is 64 MB, and what is in it counts as the
        /// extension's memory.
        @Test func fillingTmpIsBoundedAndCountsAsItsMemory() throws {
            let (fixture, path) = try Self.attack("fill-tmp")
            defer { fixture.stop() }
            let size = Int(try Self.serviceInfo(fixture, has: "tmp-size-mb")["tmp-size-mb"] ?? "") ?? .max
            #expect(size <= 64, "its /tmp holds \(size) MB")
            try Self.expectFailure(fixture, path, containing: "more than 50 MiB")
        }

        /// What the sandbox's seccomp program refuses, so that no memory hides from the walk:
        /// 500 MB in a memfd of its own, held or mapped and closed (memfds come only from
        /// replayd, which counts what it did not lend); 300 MB in memfds sent over a socket to
        /// itself and closed, 30 MB at a time (no process held them: status said 32 MB at most;
        /// a file of its /tmp sent the same way still counts, as the tmpfs is counted whoever
        /// holds the file); 300 MB mapped shared and anonymous, then all but a page unmapped
        /// (the pages stay, and no process shows them).
        @Test(arguments: [("memfd", "memfd"), ("memfd-mapped", "memfd"), ("memfd-in-flight", "memfd-in-flight"),
                          ("shared-anonymous", "shared-anonymous")])
        func memoryNoWalkSeesIsRefused(behaviour: String, key: String) throws {
            let (fixture, path) = try Self.attack(behaviour)
            defer { fixture.stop() }
            let answer = try Self.serviceInfo(fixture, has: key)[key]
            #expect(answer == "EPERM", "\(behaviour): \(answer ?? "no answer")")
            try Self.expectNothingLeft(fixture, path)
        }

        /// 300 MB of /dev/zero mapped shared (RssShmem, not RssAnon; status said 7 MB): counted.
        /// The status says who counted it.
        @Test func sharedMemoryItMapsCountsAsItsMemory() throws {
            let (fixture, path) = try Self.attack("dev-zero")
            defer { fixture.stop() }
            try Self.expectFailure(fixture, path, containing: "more than 50 MiB")
            let status = try fixture.replay(["broadcast", "status"]).stdout
            #expect(status.contains("of 50 MiB, counted by replayd's walk"), "\(status)")
        }

        /// 300 MB queued on socket pairs it writes to and never reads: counted through sock_diag.
        @Test func unreadSocketBuffersCountAsItsMemory() throws {
            let (fixture, path) = try Self.attack("socket-buffers")
            defer { fixture.stop() }
            try Self.expectFailure(fixture, path, containing: "more than 50 MiB")
        }

        /// 20 MB each in /tmp, in /dev/zero mapped shared and on unread sockets: all count together.
        @Test func memoryHiddenInThreePlacesAddsUp() throws {
            let (fixture, path) = try Self.attack("stacked")
            defer { fixture.stop() }
            try Self.expectFailure(fixture, path, containing: "more than 50 MiB")
        }

        /// A user and mount namespace of its own, with 300 MB in a tmpfs mounted there, which
        /// neither its /tmp nor any process shows. Against a system daemon, whose extensions run
        /// as the `replayd` user: a root sandbox may not map root in a nested namespace anyway.
        /// The other calls the seccomp program refuses are tried too.
        @Test func anExtensionCannotMountATmpfsInANamespaceOfItsOwn() throws {
            let base = URL(fileURLWithPath: "/var/tmp/ork-test-state-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: base) }
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false),
                                            storeDirectory: base.appendingPathComponent("recordings"), socketName: "run/replayd.sock")
            defer { fixture.stop() }
            try fixture.startDaemon(["--system"] + Broadcast.installExtensions(in: fixture))
            let start = try fixture.replay(["broadcast", "start", "--extension", "hostile", "--setup", "behaviour=nested-tmpfs"])
            #expect(start.status == 0, "\(start)\n\(fixture.daemonLog.suffix(2000))")
            let info = try Self.serviceInfo(fixture, has: "calls")
            let nested = info["nested-tmpfs"] ?? "no answer"
            #expect(nested.contains("Operation not permitted"), "the extension mounted a tmpfs of its own: \(nested)")
            for call in (info["calls"] ?? "").split(separator: ", ") {
                #expect(call.hasSuffix("=EPERM"), "\(call)")
            }
            try Self.expectNothingLeft(fixture, fixture.file("extensions/replay-hostile-extension").path)
        }

        /// A System V segment is no process's memory once detached: refused.
        @Test func anExtensionCannotMakeASystemVSharedMemorySegment() throws {
            let (fixture, path) = try Self.attack("sysv-shm")
            defer { fixture.stop() }
            let shmget = try Self.serviceInfo(fixture, has: "shmget")["shmget"]
            #expect(shmget == "EPERM", "shmget: \(shmget ?? "no answer")")
            try Self.expectNothingLeft(fixture, path)
        }

        /// 300 MB in a child forked from a thread other than the main one, which the main
        /// thread's children list does not show.
        @Test func aChildForkedFromAThreadCountsAsItsMemory() throws {
            let (fixture, path) = try Self.attack("thread-child")
            defer { fixture.stop() }
            try Self.expectFailure(fixture, path, containing: "more than 50 MiB")
        }

        @Test func aForkBombEndsTheBroadcast() throws {
            let (fixture, path) = try Self.attack("fork-bomb")
            defer { fixture.stop() }
            try Self.expectFailure(fixture, path, containing: "more than 64 processes")
        }

        /// It ignores SIGTERM and "finished", blocks exit() and leaves a child in a session of
        /// its own: stopping the broadcast still leaves nothing.
        @Test func anExtensionThatWillNotGoIsKilledWithEverythingItStarted() throws {
            let (fixture, path) = try Self.attack("linger")
            defer { fixture.stop() }
            _ = try Self.serviceInfo(fixture, has: "lingering")
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            let final = try Broadcast.waitUntilOver(fixture)
            #expect(final?["state"] as? String == "finished", "\(final ?? [:])")
            try Self.expectNothingLeft(fixture, path)
        }

        /// replayd killed outright while such an extension runs: nothing closes its connection
        /// in order, and the extension would outlive it but for --die-with-parent.
        @Test func killingReplaydTakesItsExtensionWithIt() throws {
            let (fixture, path) = try Self.attack("linger")
            defer { fixture.stop() }
            _ = try Self.serviceInfo(fixture, has: "lingering")
            #expect(!sandboxProcesses(running: path).isEmpty, "the sandbox is not found running")
            let daemon = try #require(fixture.daemon)
            daemon.signal(SIGKILL)
            daemon.wait()
            let left = sandboxLeftovers(running: path, timeout: 10)
            #expect(left.isEmpty, "still running after replayd died: \(left)")
        }
    }
}
