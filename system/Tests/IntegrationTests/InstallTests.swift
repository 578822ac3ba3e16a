import Foundation
import ReplayIPC
import ReplaySystem
import ReplayTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
    /// scripts/install and what it installs: the units pass systemd-analyze, socket activation
    /// starts one replayd that serves every connection, and an uninstall leaves nothing behind.
    @Suite struct Install {
        static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        static let script = root.appendingPathComponent("scripts/install").path
        /// The binaries the tests run (this build's), installed with --no-build.
        static let binaries = URL(fileURLWithPath: ReplayFixture.replayd).deletingLastPathComponent().path

        /// Every file and folder under `directory`, relative, sorted.
        static func listing(_ directory: URL) -> [String] {
            let enumerator = FileManager.default.enumerator(atPath: directory.path)
            var entries: [String] = []
            while let entry = enumerator?.nextObject() as? String { entries.append(entry) }
            return entries.sorted()
        }

        /// scripts/install with `arguments` into `prefix`, from this build's binaries.
        static func install(_ arguments: [String], prefix: URL) throws -> CommandResult {
            try Command.run("/bin/bash", [script, "--prefix", prefix.path, "--no-build", "--from", binaries] + arguments, timeout: 300)
        }

        /// A scratch prefix with a file of somebody else's in a folder the install also uses,
        /// and an empty folder of its own: neither may be touched.
        static func scratchPrefix() throws -> URL {
            let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("ork-install-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: prefix.appendingPathComponent("bin"), withIntermediateDirectories: true)
            try "#!/bin/sh\n".write(to: prefix.appendingPathComponent("bin/someone-elses-tool"), atomically: true, encoding: .utf8)
            try FileManager.default.createDirectory(at: prefix.appendingPathComponent("share/man/man1"), withIntermediateDirectories: true)
            return prefix
        }

        @Test func installThenUninstallLeavesThePrefixAsItWas() throws {
            let prefix = try Self.scratchPrefix()
            defer { try? FileManager.default.removeItem(at: prefix) }
            let before = Self.listing(prefix)

            let installed = try Self.install(["--no-enable"], prefix: prefix)
            try #require(installed.status == 0, "\(installed)")
            let manifest = try String(contentsOf: prefix.appendingPathComponent("share/openreplaykit/installed-files"), encoding: .utf8)
            #expect(!manifest.contains("someone-elses-tool"))
            for file in ["bin/replay", "bin/replayd", "bin/replay-demo-scene", "lib/openreplaykit/replay-capture",
                         "share/openreplaykit/extensions/rtmp.json", "share/openreplaykit/extensions/replay-rtmp-extension",
                         "share/openreplaykit/extensions/file.json", "share/openreplaykit/extensions/replay-webrtc-extension",
                         "share/openreplaykit/extensions/videoroom.json", "share/openreplaykit/extensions/replay-videoroom-extension",
                         "share/openreplaykit/extensions/gst.json", "share/openreplaykit/extensions/replay-gst-extension",
                         "share/systemd/user/replayd.service", "share/systemd/user/replayd.socket",
                         "share/systemd/user/replayd@.service", "share/systemd/user/replayd@.socket",
                         "bin/replay-ui", "share/dbus-1/services/org.openreplaykit.UI.service", "share/man/man1/replay-ui.1",
                         "share/applications/org.openreplaykit.UI.desktop", "share/icons/hicolor/scalable/apps/org.openreplaykit.UI.svg",
                         "lib/libopenreplaykit.so.1", "lib/libopenreplaykit.so", "include/openreplaykit.h", "lib/pkgconfig/openreplaykit.pc"] {
                #expect(FileManager.default.fileExists(atPath: prefix.appendingPathComponent(file).path), "\(file) missing")
                #expect(manifest.contains(prefix.appendingPathComponent(file).path + "\n"), "\(file) not in the manifest")
            }
            // Generated, not written by hand: each names the subcommands.
            for file in ["share/man/man1/replay.1", "share/man/man1/replayd.1",
                         "share/bash-completion/completions/replay", "share/zsh/site-functions/_replay",
                         "share/fish/vendor_completions.d/replay.fish", "share/bash-completion/completions/replayd"] {
                let text = (try? String(contentsOf: prefix.appendingPathComponent(file), encoding: .utf8)) ?? ""
                #expect(!text.isEmpty, "\(file) is empty or missing")
                if file.contains("replayd") {
                    #expect(text.contains("socket"), "\(file) does not mention --socket")
                } else {
                    #expect(text.contains("record"), "\(file) does not mention record")
                }
            }
            let help = try Command.run(prefix.appendingPathComponent("bin/replay").path, ["--help"])
            #expect(help.status == 0 && help.stdout.contains("record"), "\(help)")
            // One Swift runtime beside the binaries, which each of them loads, not the toolchain's.
            let runtime = prefix.appendingPathComponent("lib/openreplaykit/swift").path
            #expect(manifest.contains(runtime + "/libswiftCore.so\n"))
            for file in ["bin/replay", "bin/replayd", "lib/openreplaykit/replay-capture", "share/openreplaykit/extensions/replay-file-extension",
                         "lib/libopenreplaykit.so.1"] {
                let libraries = try Command.run("/usr/bin/ldd", [prefix.appendingPathComponent(file).path])
                let core = libraries.stdout.split(separator: "\n").first { $0.contains("libswiftCore.so =>") }
                    .map { String($0.split(separator: " ")[2]) }
                #expect(core.map { URL(fileURLWithPath: $0).standardizedFileURL.deletingLastPathComponent().path } == runtime,
                        "\(file): \(libraries.stdout)")
            }
            // libopenreplaykit as a C app's author finds it: through pkg-config, under its soname,
            // with the prefix's runtime (a C program built against it runs).
            let flags = try Command.run(Command.which("pkg-config"), ["--cflags", "--libs", "openreplaykit"],
                                        environment: ["PKG_CONFIG_PATH": prefix.appendingPathComponent("lib/pkgconfig").path])
            #expect(flags.status == 0 && flags.stdout.contains("-L\(prefix.path)/lib") && flags.stdout.contains("-I\(prefix.path)/include"), "\(flags)")
            let program = prefix.appendingPathComponent("version-probe")
            try "#include <openreplaykit.h>\n#include <stdio.h>\nint main(void) { puts(ork_version()); return 0; }\n"
                .write(to: prefix.appendingPathComponent("version-probe.c"), atomically: true, encoding: .utf8)
            let built = try Command.run(Command.which("cc"), [prefix.appendingPathComponent("version-probe.c").path, "-o", program.path]
                                        + flags.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
                                        + ["-Wl,-rpath,\(prefix.path)/lib"])
            try #require(built.status == 0, "\(built)")
            let probe = try Command.run(program.path, [])
            #expect(probe.status == 0 && probe.stdout == ReleaseVersion.current + "\n", "\(probe)")
            try? FileManager.default.removeItem(at: program)
            try? FileManager.default.removeItem(at: prefix.appendingPathComponent("version-probe.c"))

            // The units start the installed replayd, and name the extensions of this prefix.
            let service = try String(contentsOf: prefix.appendingPathComponent("share/systemd/user/replayd.service"), encoding: .utf8)
            #expect(service.contains("ExecStart=\(prefix.path)/bin/replayd --idle-exit 300 --extensions-dir \(prefix.path)/share/openreplaykit/extensions"),
                    "\(service)")

            // The session bus starts the installed dialogs, and only those.
            let activation = try String(contentsOf: prefix.appendingPathComponent("share/dbus-1/services/org.openreplaykit.UI.service"), encoding: .utf8)
            #expect(activation.contains("Exec=\(prefix.path)/bin/replay-ui --gapplication-service\n"), "\(activation)")

            // Installing again over it, then uninstalling once, still removes everything.
            let again = try Self.install(["--no-enable"], prefix: prefix)
            #expect(again.status == 0, "\(again)")
            let removed = try Self.install(["--uninstall"], prefix: prefix)
            #expect(removed.status == 0, "\(removed)")
            #expect(Self.listing(prefix) == before)
            // A second uninstall has nothing to remove, and says so.
            let nothing = try Self.install(["--uninstall"], prefix: prefix)
            #expect(nothing.status != 0 && nothing.stderr.contains("nothing to uninstall"), "\(nothing)")
        }

        @Test func everyUnitPassesSystemdAnalyzeVerify() throws {
            let analyze = Command.which("systemd-analyze")
            try #require(FileManager.default.isExecutableFile(atPath: analyze), "systemd-analyze missing: scripts/install-deps installs systemd")
            let prefix = try Self.scratchPrefix()
            defer { try? FileManager.default.removeItem(at: prefix) }
            // The user units and, as root, the system ones, as installed (real ExecStart paths).
            let user = try Self.install(["--no-enable"], prefix: prefix)
            try #require(user.status == 0, "\(user)")
            let runtime = prefix.appendingPathComponent("runtime")
            try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
            let userUnits = prefix.appendingPathComponent("share/systemd/user")
            // Templates are checked as an instance (display :0).
            let userFiles = ["replayd.socket", "replayd.service", "replayd@0.socket", "replayd@0.service"]
                .map { userUnits.appendingPathComponent($0).path }
            // --man=no: man pages are not installed in containers; the check is about the units.
            let verifyUser = try Command.run(analyze, ["verify", "--user", "--man=no"] + userFiles,
                                             environment: ["XDG_RUNTIME_DIR": runtime.path], timeout: 60)
            // Unknown keys and bad values are only warnings (exit 0): any output is a failure.
            #expect(verifyUser.status == 0 && verifyUser.stderr.isEmpty && verifyUser.stdout.isEmpty, "\(verifyUser)")
            try FileManager.default.removeItem(at: runtime)
            let removedUser = try Self.install(["--uninstall"], prefix: prefix)
            #expect(removedUser.status == 0, "\(removedUser)")

            guard getuid() == 0 else { return }
            let system = try Self.install(["--system", "--no-enable", "--owner", "nobody"], prefix: prefix)
            try #require(system.status == 0, "\(system)")
            let systemUnits = prefix.appendingPathComponent("lib/systemd/system")
            let service = try String(contentsOf: systemUnits.appendingPathComponent("replayd.service"), encoding: .utf8)
            #expect(service.contains("ExecStart=\(prefix.path)/bin/replayd --system --owner nobody --extensions-dir"), "\(service)")
            for setting in ["ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes", "ProtectHome=read-only",
                            "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "StateDirectory=openreplaykit"] {
                #expect(service.contains("\n\(setting)"), "\(setting) missing")
            }
            let verifySystem = try Command.run(analyze, ["verify", "--man=no"]
                + ["replayd.socket", "replayd.service"].map { systemUnits.appendingPathComponent($0).path }, timeout: 60)
            #expect(verifySystem.status == 0 && verifySystem.stderr.isEmpty && verifySystem.stdout.isEmpty, "\(verifySystem)")
            let removedSystem = try Self.install(["--system", "--uninstall"], prefix: prefix)
            #expect(removedSystem.status == 0, "\(removedSystem)")
        }

        /// The pid's executable, or nil once it is gone.
        static func executable(of pid: Int32) -> String? {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
        }

        @Test func socketActivationStartsOneReplaydThatServesEveryConnection() throws {
            let activate = Command.which("systemd-socket-activate")
            try #require(FileManager.default.isExecutableFile(atPath: activate), "systemd-socket-activate missing: scripts/install-deps installs systemd")
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            // systemd-socket-activate passes on only the variables it is given (-E).
            let variables = fixture.environment().sorted { $0.key < $1.key }.flatMap { ["-E", "\($0.key)=\($0.value)"] }
            let activator = try Command.start(activate, ["-l", fixture.socket] + variables
                + [ReplayFixture.replayd, "--store", fixture.store.path, "--capture", "x11", "--no-pages", "--log-level", "debug"])
            defer { activator.process.terminate(grace: 10) }
            let pid = activator.process.pid
            // Listening, and nothing started yet: the socket is the activator's.
            try #require(poll(timeout: 10, every: 0.05) { UnixSocket.acceptsConnections(path: fixture.socket) ? true : nil } == true,
                         "no socket: \(activator.finish(timeout: 1))")
            #expect(Self.executable(of: pid)?.hasSuffix("systemd-socket-activate") == true)

            // The first connection starts replayd in its place, which serves it.
            let first = try fixture.replay(["status"], timeout: 30)
            #expect(first.status == 0 && first.stdout.contains("replayd pid \(pid) "), "\(first)")
            #expect(Self.executable(of: pid) == URL(fileURLWithPath: ReplayFixture.replayd).resolvingSymlinksInPath().path)
            // A second connection: the same daemon.
            let second = try fixture.replay(["status"], timeout: 30)
            #expect(second.status == 0 && second.stdout.contains("replayd pid \(pid) "), "\(second)")
            #expect(activator.process.isRunning)

            // SIGTERM stops it cleanly, and the socket (the service manager's) stays in place.
            activator.process.terminate(grace: 10)
            let ended = activator.finish(timeout: 15)
            #expect(ended.status == 0, "\(ended)")
            #expect(ended.stderr.contains("replayd stopped"), "\(ended)")
            #expect(FileManager.default.fileExists(atPath: fixture.socket))
        }

        @Test func aHandedOverSocketThatDisagreesWithSocketIsRefused() throws {
            let activate = Command.which("systemd-socket-activate")
            try #require(FileManager.default.isExecutableFile(atPath: activate))
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            let variables = fixture.environment().flatMap { ["-E", "\($0.key)=\($0.value)"] }
            let other = fixture.file("other.sock").path
            let activator = try Command.start(activate, ["-l", fixture.socket] + variables
                + [ReplayFixture.replayd, "--socket", other, "--store", fixture.store.path, "--no-pages"])
            defer { activator.process.terminate(grace: 5) }
            try #require(poll(timeout: 10, every: 0.05) { UnixSocket.acceptsConnections(path: fixture.socket) ? true : nil } == true)
            let fd = try UnixSocket.connect(path: fixture.socket)
            defer { close(fd) }
            let ended = activator.finish(timeout: 15)
            #expect(ended.status == 1, "\(ended)")
            #expect(ended.stderr.contains("differs from the socket handed over"), "\(ended)")
            #expect(!FileManager.default.fileExists(atPath: other))
        }
    }
}
