import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// Each recording, clip buffer, in-app capture and broadcast's capture runs in a capture
    /// process of its own (`replay-capture`), started by replayd.
    @Suite struct CaptureProcesses {
        /// The capture processes replayd runs now: pid → the movie file each writes.
        static func captureProcesses(of daemon: Int32) -> [Int32: String] {
            var found: [Int32: String] = [:]
            for (child, exe) in children(of: daemon) where exe.hasSuffix("/replay-capture") {
                found[child] = openFiles(of: child).first { $0.hasSuffix(".mp4") } ?? ""
            }
            return found
        }

        /// replayd's children that are not capture processes: the extensions' sandboxes.
        static func extensionProcesses(of daemon: Int32) -> [Int32] {
            children(of: daemon).filter { !$0.exe.hasSuffix("/replay-capture") }.map(\.pid)
        }

        /// The processes replayd started (children of any of its threads), with their executables.
        static func children(of daemon: Int32) -> [(pid: Int32, exe: String)] {
            ProcFS.entries(of: "/proc/\(daemon)/task").flatMap { task in
                (ProcFS.text("/proc/\(daemon)/task/\(task)/children") ?? "").split(separator: " ").compactMap { Int32($0) }.map { child in
                    (child, (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(child)/exe")) ?? "")
                }
            }
        }

        /// Where each descriptor of `pid` points (`socket:[N]`, a path, `pipe:[N]`…).
        static func openFiles(of pid: Int32) -> [String] {
            ProcFS.entries(of: "/proc/\(pid)/fd").compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
        }

        /// The recording id `replay record` announced on its standard error.
        static func announcedID(_ command: RunningCommand, timeout: Double = 30) -> String? {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let match = command.errorsSoFar.firstMatch(of: /Recording (rec-[0-9a-f-]+) at/) { return String(match.1) }
                Thread.sleep(forTimeInterval: 0.1)
            }
            return nil
        }

        @Test func aCrashedCaptureProcessEndsItsOwnRecordingAloneAndKeepsItsMovie() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon(Broadcast.installExtensions(in: fixture))
            let daemon = try #require(fixture.daemon)
            let victim = try fixture.startReplay(["record", "--duration", "12"])
            let survivor = try fixture.startReplay(["record", "--duration", "12"])
            let output = fixture.file("broadcast")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            let broadcast = try fixture.replay(["broadcast", "start", "--extension", "file", "--setup", "dir=\(output.path)"])
            #expect(broadcast.status == 0, "\(broadcast)")
            let victimID = try #require(Self.announcedID(victim), "\(victim.errorsSoFar)")
            let survivorID = try #require(Self.announcedID(survivor), "\(survivor.errorsSoFar)")
            Thread.sleep(forTimeInterval: 4)

            // Two recordings' and the broadcast's.
            let processes = Self.captureProcesses(of: daemon.pid)
            #expect(processes.count == 3, "capture processes: \(processes)")
            let target = try #require(processes.first { $0.value.hasSuffix("/\(victimID).mp4") }?.key, "\(processes)")
            kill(target, SIGSEGV)

            let crashed = victim.finish(timeout: 30)
            #expect(crashed.stderr.contains("the capture process was ended by SIGSEGV"), "\(crashed)")
            // The others go on: the second recording to its end, the broadcast live.
            let finished = survivor.finish(timeout: 30)
            #expect(finished.status == 0, "\(finished)")
            #expect(finished.stdout.contains("duration: 12.0"), "\(finished)")
            let live = try fixture.replay(["broadcast", "status", "--json"])
            #expect(live.stdout.contains("\"live\""), "\(live)")
            let stopped = try fixture.replay(["broadcast", "stop"])
            #expect(stopped.status == 0, "\(stopped)")
            #expect(daemon.isRunning, "replayd's log:\n\(fixture.daemonLog)")

            // Its movie plays up to the crash (its last whole fragment), and the store says what ended it.
            let movie = fixture.store.appendingPathComponent("\(victimID).mp4")
            let probe = try MediaProbe(movie)
            let kept = probe.video?.duration ?? 0
            #expect(kept >= 2 && kept <= 6, "kept \(kept) s of a recording crashed about 4 s in")
            let listed = try fixture.replay(["recordings", "list", "--json"])
            let entries = (try? JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]]) ?? []
            let entry = try #require(entries.first { $0["id"] as? String == victimID }, "\(listed)")
            #expect(entry["state"] as? String == "interrupted", "\(entry)")
            #expect((entry["error"] as? String)?.contains("SIGSEGV") == true, "\(entry)")
            #expect(entry["frames"] as? Int == probe.video?.packets, "\(entry) against \(probe.video?.packets ?? 0) in the file")
            #expect(entries.first { $0["id"] as? String == survivorID }?["state"] as? String == "complete", "\(listed)")
            // Every capture process is gone with its session.
            #expect(Self.captureProcesses(of: daemon.pid).isEmpty)
        }

        /// An app's capture of its own windows runs in a capture process too: killed, it ends
        /// that capture alone, the app hears which signal ended it, and a recording goes on.
        @Test func aKilledInAppCaptureProcessEndsThatCaptureAloneAndTheAppHearsWhy() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon(Privacy.allowExampleApp(in: fixture))
            let daemon = try #require(fixture.daemon)
            let recording = try fixture.startReplay(["record", "--duration", "10", "--json"])
            let app = try fixture.startApp(["--colour", "blue", "--geometry", "100,100,300,200", "--no-protect",
                                            "--share-frames", "1000000", "--share-fps", "10"])
            // The in-app capture's process is the one with no movie open; it holds the pictures' memfd.
            // Both must be there, the recording's with its movie open: a recording's process that
            // has not opened its movie yet has none either.
            let target = try #require(poll(timeout: 30, every: 0.2) { () -> Int32? in
                let processes = Self.captureProcesses(of: daemon.pid)
                guard processes.count == 2, processes.values.contains(where: { !$0.isEmpty }) else { return nil }
                return processes.first { $0.value.isEmpty }?.key
            }, "no in-app capture process: \(app.outputSoFar)\n\(fixture.daemonLog.suffix(3000))")
            // It holds the pictures' memfd once the capture has started.
            let holdsPictures = { Self.openFiles(of: target).contains { $0.contains("openreplaykit-app-capture") } }
            #expect(poll(timeout: 30, every: 0.1) { holdsPictures() ? true : nil } == true, "\(Self.openFiles(of: target))")
            kill(target, SIGKILL)

            let ended = app.finish(timeout: 30)
            let error = ended.jsonLines.first { $0["event"] as? String == "error" }
            #expect((error?["message"] as? String)?.contains("the capture process was ended by SIGKILL") == true, "\(ended)")
            let recorded = recording.finish(timeout: 30)
            #expect(recorded.status == 0, "\(recorded)")
            let summary = try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any]
            #expect(abs((summary?["duration"] as? Double ?? 0) - 10) < 0.5, "\(recorded)")
            #expect(daemon.isRunning, "replayd's log:\n\(fixture.daemonLog)")
            #expect(Self.captureProcesses(of: daemon.pid).isEmpty)
        }

        /// A broadcast's capture runs in a capture process too: crashed, it ends that broadcast
        /// alone with the signal as its error, the extension is stopped, and a recording goes on.
        @Test func aCrashedBroadcastCaptureProcessEndsThatBroadcastAloneWithTheSignal() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon(Broadcast.installExtensions(in: fixture))
            let daemon = try #require(fixture.daemon)
            let recording = try fixture.startReplay(["record", "--duration", "8", "--json"])
            let output = fixture.file("broadcast")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            let started = try fixture.replay(["broadcast", "start", "--extension", "file", "--setup", "dir=\(output.path)"])
            #expect(started.status == 0, "\(started)")
            // The broadcast's process is the one that holds the shared surfaces (and no movie).
            let target = try #require(poll(timeout: 30, every: 0.2) {
                Self.captureProcesses(of: daemon.pid).keys.first { pid in
                    Self.openFiles(of: pid).contains { $0.contains("openreplaykit-broadcast") }
                }
            }, "no broadcast capture process: \(fixture.daemonLog.suffix(3000))")
            Thread.sleep(forTimeInterval: 2)
            kill(target, SIGSEGV)

            let failed = try #require(try Broadcast.waitUntilOver(fixture), "\(fixture.daemonLog.suffix(3000))")
            #expect(failed["state"] as? String == "failed", "\(failed)")
            #expect((failed["lastError"] as? String)?.contains("the capture process was ended by SIGSEGV") == true, "\(failed)")
            // The extension was told, and is gone with the broadcast; the recording goes on to its end.
            #expect(poll(timeout: 10, every: 0.2) { Self.extensionProcesses(of: daemon.pid).isEmpty ? true : nil } == true)
            let recorded = recording.finish(timeout: 30)
            #expect(recorded.status == 0, "\(recorded)")
            let summary = try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any]
            #expect(abs((summary?["duration"] as? Double ?? 0) - 8) < 0.5, "\(recorded)")
            #expect(daemon.isRunning, "replayd's log:\n\(fixture.daemonLog)")
            #expect(Self.captureProcesses(of: daemon.pid).isEmpty)
        }

        @Test func aCaptureProcessHoldsOnlyWhatItWasHandedAndRunsConfined() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let daemon = try #require(fixture.daemon)
            // A client's connection, which the process must not hold.
            let bystander = try UnixSocket.connect(path: fixture.socket)
            defer { close(bystander) }
            let recording = try fixture.startReplay(["record", "--duration", "20"])
            let id = try #require(Self.announcedID(recording), "\(recording.errorsSoFar)")
            // Its process, once it has opened its movie.
            let movie = fixture.store.appendingPathComponent("\(id).mp4").path
            let pid = try #require(poll(timeout: 30, every: 0.1) {
                Self.captureProcesses(of: daemon.pid).first { $0.value == movie }?.key
            }, "no capture process with \(movie) open: \(Self.captureProcesses(of: daemon.pid))")

            let held = Self.openFiles(of: pid)
            let daemonHolds = Set(Self.openFiles(of: daemon.pid))
            // Of the store, its own movie only; of replayd's sockets (its listener, its clients,
            // its end of the channel: a socketpair's two ends are two inodes), none.
            let inStore = held.filter { $0.hasPrefix(fixture.store.path) }
            #expect(Set(inStore) == [fixture.store.appendingPathComponent("\(id).mp4").path], "\(held)")
            let sharedSockets = held.filter { $0.hasPrefix("socket:") && daemonHolds.contains($0) }
            #expect(sharedSockets.isEmpty, "sockets replayd holds too: \(sharedSockets); all: \(held)")
            #expect(!held.contains { $0.contains(fixture.socket) })
            // No userfaultfd either: no watch that stalls its own pages, in it or in replayd.
            let watch = "anon_inode:[userfaultfd]"
            #expect(!held.contains(watch), "\(held)")
            #expect(!daemonHolds.contains(watch), "\(daemonHolds)")
            // No new privileges, and two seccomp filters more than replayd has: the one it was
            // started under, and its own against any userfaultfd (a hostile stream's lever).
            let status = ProcFS.text("/proc/\(pid)/status") ?? ""
            #expect(status.contains("NoNewPrivs:\t1"), "\(status)")
            #expect(status.contains("Seccomp:\t2"), "\(status)")
            let filters = { (pid: Int32) in ProcFS.text("/proc/\(pid)/status")?.split(separator: "\n")
                .first { $0.hasPrefix("Seccomp_filters:") }.flatMap { Int($0.split(separator: "\t").last ?? "") } }
            let daemonFilters = try #require(filters(daemon.pid))
            #expect(filters(pid) == daemonFilters + 2, "\(status)")

            recording.process.signal(SIGINT)  // Ctrl-C: the recording stops, kept
            let result = recording.finish(timeout: 30)
            #expect(result.status == 0, "\(result)")
        }

        /// A compromised capture process (the hostile program, put beside a copy of replayd as
        /// its `replay-capture`, so replayd starts it as it starts any): it can neither read,
        /// list, write nor delete in the store, still reads the system's files, and holds only
        /// what it was handed. Its session fails, and replayd serves on.
        @Test(.enabled(if: ChildProcess.landlockABI >= 1, "Landlock is not enabled in this kernel"))
        func aHostileCaptureProcessCannotTouchTheStore() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            // Someone's movie, already in the store.
            try FileManager.default.createDirectory(at: fixture.store, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            let movie = fixture.store.appendingPathComponent("rec-20260101-000000-0000cafe.mp4")
            try Data("someone's movie".utf8).write(to: movie)
            let bin = fixture.directory.appendingPathComponent("bin")
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            // replay too: replayd trusts as the person's only the replay beside it.
            for program in ["replayd", "replay"] {
                try FileManager.default.copyItem(atPath: VirtualDesktop.siblingExecutable(program).path, toPath: bin.appendingPathComponent(program).path)
            }
            let replay = { (arguments: [String]) throws -> CommandResult in
                try Command.run(bin.appendingPathComponent("replay").path, arguments + ["--socket", fixture.socket],
                                environment: fixture.environment([:]), timeout: 60)
            }
            try FileManager.default.createSymbolicLink(atPath: bin.appendingPathComponent("replay-capture").path,
                                                       withDestinationPath: VirtualDesktop.siblingExecutable("replay-hostile-extension").path)
            try fixture.startDaemon(environment: ["HOSTILE_STORE": fixture.store.path, "HOSTILE_MOVIE": movie.path],
                                    executable: bin.appendingPathComponent("replayd").path)

            let recorded = try replay(["record", "--duration", "1"])
            #expect(recorded.status != 0)
            #expect(recorded.stderr.contains("the capture process exited with status 3 while starting"), "\(recorded)")
            let said = try #require(fixture.daemonLog.split(separator: "\n").first { $0.hasPrefix("hostile capture process:") },
                                    "\(fixture.daemonLog)")
            for refused in ["read=EACCES", "list=EACCES", "write=EACCES", "remove=EACCES"] {
                #expect(said.contains(refused), "\(said)")
            }
            #expect(said.contains("system=ok"), "\(said)")
            // Standard input and output on /dev/null, standard error replayd's log, its channel: nothing else.
            let inherited = try #require(said.split(separator: " ").first { $0.hasPrefix("inherited=") })
            let descriptors = inherited.dropFirst("inherited=".count).split(separator: ",")
            #expect(descriptors.map { $0.prefix { $0 != "=" } } == ["0", "1", "2", "3"], "\(inherited)")
            #expect(descriptors.last?.contains("socket:") == true, "\(inherited)")
            #expect(try String(contentsOf: movie, encoding: .utf8) == "someone's movie")
            #expect(!FileManager.default.fileExists(atPath: fixture.store.appendingPathComponent("forged.mp4").path))
            // replayd serves on.
            #expect(try replay(["status"]).status == 0)
        }

        /// The libraries that capture and encode: a capture process maps them, replayd never.
        static let captureLibraries = ["libavcodec", "libavformat", "libavutil", "libswresample", "libx264", "libx265",
                                       "libSvtAv1Enc", "librav1e", "libpipewire", "libspa", "libyuv"]

        /// The capture and codec libraries `pid` has mapped.
        static func captureLibrariesMapped(by pid: Int32) -> Set<String> {
            let maps = ProcFS.text("/proc/\(pid)/maps") ?? ""
            return Set(captureLibraries.filter { library in maps.contains("/\(library)") })
        }

        /// replayd links no FFmpeg, encoder or PipeWire: while it records (and after), its
        /// memory maps none of them, and the capture process maps them instead.
        @Test func replaydMapsNoCaptureOrCodecLibraryItsCaptureProcessDoes() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let daemon = try #require(fixture.daemon)
            let recording = try fixture.startReplay(["record", "--duration", "20"])
            _ = try #require(Self.announcedID(recording), "\(recording.errorsSoFar)")
            // The capture process, once it has loaded its encoder (with the first pictures).
            let encoding: Set = ["libavcodec", "libavformat", "libx264"]
            _ = try #require(poll(timeout: 30, every: 0.1) {
                Self.captureProcesses(of: daemon.pid).keys.first { Self.captureLibrariesMapped(by: $0).isSuperset(of: encoding) }
            }, "no capture process mapped \(encoding): \(Self.captureProcesses(of: daemon.pid).keys.map(Self.captureLibrariesMapped))")
            #expect(Self.captureLibrariesMapped(by: daemon.pid).isEmpty)

            recording.process.signal(SIGINT)
            #expect(recording.finish(timeout: 30).status == 0)
            #expect(Self.captureLibrariesMapped(by: daemon.pid).isEmpty)
        }

        @Test func aBrokenMovieIsAClearExportErrorNotACrash() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let daemon = try #require(fixture.daemon)
            let recorded = try fixture.replay(["record", "--duration", "2", "--output", fixture.file("first.mp4").path])
            #expect(recorded.status == 0, "\(recorded)")
            let movie = try #require(fixture.storedMovies().first)
            let id = movie.deletingPathExtension().lastPathComponent
            let good = try fixture.replay(["recordings", "export", id, "--to", fixture.file("good.mkv").path])
            #expect(good.status == 0, "\(good)")
            #expect(try MediaProbe(fixture.file("good.mkv")).video != nil)

            // Bytes no demuxer can read, where the movie was.
            try Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }).write(to: movie)
            let broken = try fixture.replay(["recordings", "export", id, "--to", fixture.file("broken.mkv").path])
            #expect(broken.status != 0 && broken.stderr.contains("cannot export \(id) as Matroska"), "\(broken)")
            #expect(daemon.isRunning, "replayd's log:\n\(fixture.daemonLog.suffix(2000))")
            #expect(try fixture.replay(["status"]).status == 0)
            // Nothing of the remux is left in the store.
            let left = (try? FileManager.default.contentsOfDirectory(atPath: fixture.store.path)) ?? []
            #expect(!left.contains { $0.hasPrefix(".export-") }, "\(left)")
        }
    }
}
