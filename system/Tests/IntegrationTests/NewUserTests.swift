import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// What a new user hit on a fresh clone (issue 25): files of theirs that must never be
    /// lost, errors that must come before the take, and what people reach for.
    @Suite struct NewUser {
        /// Runs `command` through the shell, standard output into `file`: the movie on a pipe.
        static func shell(_ command: String, fixture: ReplayFixture, timeout: Double = 60) throws -> CommandResult {
            try Command.run("/bin/sh", ["-c", command], environment: fixture.environment(), timeout: timeout)
        }

        /// A folder with a file of the person's in it.
        static func folderWithAFile(_ fixture: ReplayFixture, _ name: String) throws -> URL {
            let folder = fixture.file(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data("keep me".utf8).write(to: folder.appendingPathComponent("notes.txt"))
            return folder
        }

        static func folderIsIntact(_ folder: URL) -> Bool {
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder) && isFolder.boolValue
                && (try? Data(contentsOf: folder.appendingPathComponent("notes.txt"))) == Data("keep me".utf8)
        }

        /// Item 1: `--force` replaces a regular file, never a folder: not before recording, not
        /// at export, and not a folder that appeared during the take (the rename refuses it).
        @Test func forceNeverReplacesAFolderAndTheTakeIsKept() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let folder = try Self.folderWithAFile(fixture, "Videos")

            let record = try fixture.replay(["record", "--duration", "1", "--output", folder.path, "--force"])
            #expect(record.status != 0 && record.stderr.contains("is a folder"), "\(record)")
            #expect(fixture.storedMovies().isEmpty, "refused before recording")
            #expect(Self.folderIsIntact(folder))

            let take = try fixture.replay(["record", "--duration", "1", "--json"])
            let id = try #require(take.jsonLines.first?["id"] as? String, "\(take)")
            let export = try fixture.replay(["recordings", "export", id, "--to", folder.path, "--force"])
            #expect(export.status != 0 && export.stderr.contains("is a folder"), "\(export)")
            #expect(Self.folderIsIntact(folder))

            // A regular file is what --force replaces, and only by the finished movie.
            let old = fixture.file("old.mp4")
            try Data("an old file".utf8).write(to: old)
            let replace = try fixture.replay(["recordings", "export", id, "--to", old.path, "--force"])
            #expect(replace.status == 0, "\(replace)")
            #expect(try MediaProbe(old).video?.codec == "h264")

            // A folder made at the target while recording survives the export, which says how to get the take.
            let late = fixture.file("late")
            let running = try fixture.startReplay(["record", "--duration", "3", "--output", late.path, "--force"])
            // Once it records (it says so when replayd has answered the start).
            #expect(running.waitForErrors(containing: "Recording rec-", timeout: 30) != nil, "\(running.errorsSoFar)")
            _ = try Self.folderWithAFile(fixture, "late")
            let result = running.finish(timeout: 30)
            #expect(result.status != 0, "\(result)")
            #expect(result.stderr.contains("is a folder, which is never replaced"), "\(result)")
            #expect(result.stderr.contains("The take is kept in the store: replay recordings export rec-"), "\(result)")
            #expect(Self.folderIsIntact(late))
            #expect(fixture.storedMovies().count == 2)
            #expect(!FileManager.default.fileExists(atPath: fixture.file(".late.partial").path), "the partial file is removed")
        }

        /// Item 2: a destination that cannot be written is refused before anything is recorded.
        @Test func aBadOutputIsRefusedBeforeTheTake() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon()

            let missing = try fixture.replay(["record", "--duration", "5", "--output", "/nonexistent/dir/x.mp4"])
            #expect(missing.status != 0 && missing.stderr.contains("its folder /nonexistent/dir does not exist"), "\(missing)")
            let proc = try fixture.replay(["record", "--duration", "5", "--output", "/proc/x.mp4"])
            #expect(proc.status != 0 && proc.stderr.contains("cannot write in /proc"), "\(proc)")
            let notAFolder = fixture.file("file")
            try Data().write(to: notAFolder)
            let under = try fixture.replay(["record", "--duration", "5", "--output", notAFolder.path + "/x.mp4"])
            #expect(under.status != 0 && under.stderr.contains("is not a folder"), "\(under)")

            // A read-only file system, and one without room for a minute: small tmpfs mounts (root).
            let readOnly = fixture.file("read-only"), small = fixture.file("small")
            for (folder, options) in [(readOnly, "ro,size=1m"), (small, "size=1m")] {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                let mount = try Command.run("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", folder.path])
                try #require(mount.status == 0, "this test needs root to mount a tmpfs: \(mount)")
            }
            defer { for folder in [readOnly, small] { _ = try? Command.run("/bin/umount", [folder.path]) } }
            let denied = try fixture.replay(["record", "--duration", "5", "--output", readOnly.appendingPathComponent("x.mp4").path])
            #expect(denied.status != 0 && denied.stderr.contains("Read-only file system"), "\(denied)")
            let full = try fixture.replay(["record", "--duration", "5", "--output", small.appendingPathComponent("x.mp4").path])
            #expect(full.status != 0 && full.stderr.contains("free in \(small.path); a minute of this recording needs about"), "\(full)")
            #expect(fixture.storedMovies().isEmpty, "nothing was recorded")
        }

        /// Items 3 and 4: bad numbers, sound sources that cannot be opened and a container
        /// that contradicts the file's name are refused before recording, with reasons.
        @Test func badNumbersMissingSoundSourcesAndContainerMismatchesAreRefusedFirst() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon()

            let negative = try fixture.replay(["record", "--duration", "-1"])
            #expect(negative.status != 0 && negative.stderr.contains("--duration must be a positive number of seconds"), "\(negative)")
            let device = try fixture.replay(["record", "--duration", "2", "--audio-device", "nosuch"])
            #expect(device.status != 0 && device.stderr.contains("cannot record app audio from 'nosuch'"), "\(device)")
            let app = try fixture.replay(["record", "--duration", "2", "--audio-app", "firefox"])
            #expect(app.status != 0 && app.stderr.contains("cannot record app audio from 'firefox'"), "\(app)")
            let mic = try fixture.replay(["record", "--duration", "2", "--mic-device", "nosuch"])
            #expect(mic.status != 0 && mic.stderr.contains("cannot record microphone from 'nosuch'"), "\(mic)")
            #expect(fixture.storedMovies().isEmpty, "\(fixture.storedMovies())")

            // Best effort, when asked for: a warning and no sound track.
            let movie = fixture.file("silent.mp4")
            let lenient = try fixture.replay(["record", "--duration", "1", "--audio-device", "nosuch", "--audio-best-effort", "--output", movie.path])
            #expect(lenient.status == 0 && lenient.stderr.contains("warning: app audio not recorded"), "\(lenient)")
            #expect(try MediaProbe(movie).audio.isEmpty)

            let mismatch = try fixture.replay(["record", "--duration", "1", "--container", "mkv", "--output", fixture.file("x.mp4").path])
            #expect(mismatch.status != 0 && mismatch.stderr.contains("--container mkv writes Matroska, but --output"), "\(mismatch)")
            let listing = try fixture.replay(["recordings", "list", "--json"]).stdout
            let id = try #require(listing.firstMatch(of: /rec-[0-9a-z-]+/).map { String($0.output) }, "\(listing)")
            let exportMismatch = try fixture.replay(["recordings", "export", id, "--container", "mp4", "--to", fixture.file("y.mkv").path])
            #expect(exportMismatch.status != 0 && exportMismatch.stderr.contains("ends in .mkv"), "\(exportMismatch)")
            #expect(fixture.storedMovies().count == 1)
        }

        /// Item 10: the version, from one place, in both programs and in `status --json`.
        @Test func theVersionIsPrintedByBothProgramsAndTheStatus() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            let replay = try Command.run(ReplayFixture.replay, ["--version"])
            #expect(replay.status == 0 && replay.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == ReleaseVersion.current, "\(replay)")
            let replayd = try Command.run(ReplayFixture.replayd, ["--version"])
            #expect(replayd.status == 0 && replayd.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == ReleaseVersion.current, "\(replayd)")
            try fixture.startDaemon()
            let status = try fixture.replay(["status", "--json"])
            #expect(status.jsonLines.first?["version"] as? String == ReleaseVersion.current, "\(status)")
        }

        /// Issue 49: where the display has no daemon of its own, `replay` reaches the session's
        /// (systemd's replayd.socket, at replayd.sock) rather than starting a second one.
        @Test func withNoDaemonOfItsDisplayTheSessionsDaemonAnswers() throws {
            let fixture = try ReplayFixture(socketName: "openreplaykit/replayd.sock")
            defer { fixture.stop() }
            try fixture.startDaemon()
            let pid = try #require(fixture.daemon?.pid)
            // No --socket, no OPENREPLAYKIT_SOCKET: the defaults, with DISPLAY set.
            let display = try #require(fixture.environment()["DISPLAY"])
            let status = try Command.run(ReplayFixture.replay, ["status", "--json"], environment: fixture.environment(["OPENREPLAYKIT_SOCKET": ""]))
            #expect(status.status == 0, "\(status)")
            #expect(status.jsonLines.first?["version"] as? String == ReleaseVersion.current, "\(status)")
            let folder = URL(fileURLWithPath: fixture.socket).deletingLastPathComponent()
            let sockets = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sock") }
            #expect(sockets == ["replayd.sock"], "a daemon was started for \(display) beside the session's: \(sockets)")
            #expect(kill(pid, 0) == 0)
        }

        /// Issue 49: with no display, `replay broadcast start` brings its own desktop as `replay
        /// record` does, stays live for --duration, stops the broadcast and leaves nothing behind.
        @Test func aBroadcastWithNoDisplayBringsItsOwnDesktop() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            let data = fixture.file("data"), output = fixture.file("out")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            try ExtensionInstall.install(ExtensionManifest(id: "file", displayName: "Write to a file", executable: "replay-file-extension",
                                                           setupFields: [.init(key: "dir", label: "Directory", kind: .directory, required: true)]),
                                         in: data.appendingPathComponent("openreplaykit/extensions"))
            let result = try Command.run(ReplayFixture.replay, ["broadcast", "start", "--extension", "file", "--setup", "dir=\(output.path)", "--duration", "4"],
                                         environment: fixture.environment(["DISPLAY": "", "WAYLAND_DISPLAY": "", "OPENREPLAYKIT_SOCKET": "",
                                                                           "XDG_DATA_HOME": data.path]), timeout: 120)
            #expect(result.status == 0, "\(result)")
            #expect(result.stderr.contains("No DISPLAY or WAYLAND_DISPLAY: starting a virtual"), "\(result.stderr)")
            #expect(result.stdout.contains("file  live") && result.stdout.contains("file  finished"), "\(result.stdout)")
            let written = try String(contentsOf: output.appendingPathComponent("broadcast.jsonl"), encoding: .utf8)
            let pictures = written.split(separator: "\n").filter { $0.contains("\"event\":\"video\"") }.count
            #expect(pictures >= 60 && written.contains("\"event\":\"finished\""), "\(pictures) pictures; \(written.suffix(300))")
            #expect(sandboxLeftovers(running: "replay-file-extension").isEmpty)
        }

        /// Item 11: `--output -` and `--to -` put a playable movie on standard output, MP4 or
        /// Matroska, with nothing else mixed into it.
        @Test func theMovieGoesToStandardOutput() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let replay = "'\(ReplayFixture.replay)'", socket = "--socket '\(fixture.socket)'"
            let mp4 = fixture.file("piped.mp4"), mkv = fixture.file("piped.mkv"), exported = fixture.file("exported.mkv")
            let record = try Self.shell("\(replay) record --duration 2 --output - \(socket) > '\(mp4.path)'", fixture: fixture)
            #expect(record.status == 0 && record.stderr.contains("id:"), "\(record)")
            let probe = try MediaProbe(mp4)
            #expect(probe.formatName?.contains("mp4") == true && probe.video?.codec == "h264", "\(probe.formatName ?? "?")")
            #expect((probe.video?.packets ?? 0) >= 40, "\(probe.video?.packets ?? 0) frames")

            let matroska = try Self.shell("\(replay) record --duration 1 --container mkv --output - \(socket) | cat > '\(mkv.path)'", fixture: fixture)
            #expect(matroska.status == 0, "\(matroska)")
            #expect(try MediaProbe(mkv).formatName?.contains("matroska") == true)

            let listing = try fixture.replay(["recordings", "list", "--json"]).stdout
            let id = try #require(listing.firstMatch(of: /rec-[0-9a-z-]+/).map { String($0.output) }, "\(listing)")
            let export = try Self.shell("\(replay) recordings export \(id) --container mkv --to - \(socket) > '\(exported.path)'", fixture: fixture)
            #expect(export.status == 0 && export.stderr.contains("to standard output"), "\(export)")
            #expect(try MediaProbe(exported).video?.codec == "h264")
            #expect(!FileManager.default.fileExists(atPath: fixture.file("-").path), "no file named -")
            let both = try fixture.replay(["record", "--duration", "1", "--json", "--output", "-"])
            #expect(both.status != 0 && both.stderr.contains("choose one"), "\(both)")
        }

        /// Item 13: several recordings deleted at once, one unknown id reported; the list shows
        /// each recording's codec, container and size.
        @Test func severalRecordingsAreDeletedAtOnceAndTheListShowsCodecAndSize() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            try fixture.startDaemon()
            var ids: [String] = []
            for codec in ["h264", "hevc", "h264"] {
                let take = try fixture.replay(["record", "--duration", "1", "--codec", codec, "--json"])
                ids.append(try #require(take.jsonLines.first?["id"] as? String, "\(take)"))
            }
            let list = try fixture.replay(["recordings", "list"])
            let lines = list.stdout.split(separator: "\n")
            #expect(lines.count == 3, "\(list)")
            #expect(lines.filter { $0.contains("h264/mp4") }.count == 2 && lines.filter { $0.contains("hevc/mp4") }.count == 1, "\(list)")
            #expect(lines.allSatisfy { $0.contains(" MB") }, "\(list)")

            let delete = try fixture.replay(["recordings", "delete", ids[0], "rec-nope", ids[1]])
            #expect(delete.status != 0, "\(delete)")
            #expect(delete.stderr.contains("Deleted \(ids[0])") && delete.stderr.contains("Deleted \(ids[1])"), "\(delete)")
            #expect(delete.stderr.contains("error: rec-nope: no recording with id 'rec-nope'"), "\(delete)")
            let left = try fixture.replay(["recordings", "list", "--json"])
            #expect(!left.stdout.contains(ids[0]) && !left.stdout.contains(ids[1]) && left.stdout.contains(ids[2]), "\(left)")
        }

        /// Item 14: the demo scene's launcher explains itself, without a display.
        @Test func theDemoSceneLauncherPrintsHelpWithoutADisplay() throws {
            let launcher = VirtualDesktop.siblingExecutable("replay-demo-scene").path
            let help = try Command.run(launcher, ["--help"], environment: ["DISPLAY": "", "WAYLAND_DISPLAY": ""])
            #expect(help.status == 0, "\(help)")
            for flag in ["--desktop", "--wayland-desktop", "--sway-desktop", "OPENREPLAYKIT_SOCKET", "WAYLAND_DISPLAY"] {
                #expect(help.stdout.contains(flag), "\(flag) is not explained: \(help)")
            }
            let unknown = try Command.run(launcher, ["--frobnicate"])
            #expect(unknown.status == 2 && unknown.stderr.contains("unknown option '--frobnicate'"), "\(unknown)")
        }

        /// Issue 46, item 4: the demo scene says its beep stream starved (a busy machine stalled
        /// it) only with --verbose, which the tests' desktops pass: never on the terminal of a
        /// person whose `scripts/record` brought the scene.
        @Test func theDemoSceneSaysItsStreamStarvedOnlyWhenVerbose() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            let scene = VirtualDesktop.siblingExecutable("replay-demo-scene").path
            /// Runs the scene, stalls it for half a second once its beeps play (as a loaded
            /// machine would), and returns what it printed once `said` holds or `wait` has passed.
            func stalledScene(_ arguments: [String], wait: Double, said: (String) -> Bool) throws -> (errors: String, after: Double) {
                let running = try Command.start(scene, arguments, environment: fixture.environment())
                // Its beeps start on the second whole second of the monotonic clock from now.
                Thread.sleep(forTimeInterval: 3)
                running.process.signal(SIGSTOP)
                Thread.sleep(forTimeInterval: 0.5)
                running.process.signal(SIGCONT)
                let resumed = Date()
                _ = poll(timeout: wait, every: 0.1) { said(running.errorsSoFar) ? true : nil }
                let after = Date().timeIntervalSince(resumed)
                running.process.terminate()
                return (running.finish(timeout: 5).stderr, after)
            }
            let verbose = try stalledScene(["--verbose"], wait: 15) { $0.contains("the beep stream starved") }
            #expect(verbose.errors.contains("the beep stream starved"), "\(verbose.errors)")
            // The same stall, without --verbose, given twice as long to say it: nothing.
            let quiet = try stalledScene([], wait: max(2, 2 * verbose.after)) { _ in false }
            #expect(!quiet.errors.contains("starved"), "\(quiet.errors)")
        }
    }
}
