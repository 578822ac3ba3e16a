import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// Programs that pass themselves off as the person's own `replay` to export a recording,
    /// each as an attacker on the same machine would try it. Each is refused, says why, and
    /// takes nothing; the genuine `replay` beside them is still served.
    @Suite struct PersonAttacks {
        /// A daemon with one recording in its store, and its id.
        private func storeWithARecording(system: Bool = false) throws -> (ReplayFixture, String) {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false),
                                            socketName: system ? "run/replayd.sock" : "replayd.sock")
            do {
                try fixture.startDaemon(system ? ["--system"] : [])
                let recorded = try fixture.replay(["record", "--duration", "1", "--json"])
                let id = try #require((try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any])?["id"] as? String,
                                      "\(recorded)\n\(fixture.daemonLog)")
                return (fixture, id)
            } catch {
                fixture.stop()
                throw error
            }
        }

        /// Runs `script` with sh, as the attacker's shell; `$REPLAY`, `$SOCKET`, `$ID` and `$OUT` are set.
        private func attack(_ script: String, fixture: ReplayFixture, id: String, out: String) throws -> CommandResult {
            try Command.run("/bin/sh", ["-c", script], environment: fixture.environment([
                "REPLAY": ReplayFixture.replay, "SOCKET": fixture.socket, "ID": id, "OUT": out,
                "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            ]), timeout: 60)
        }

        /// The attack was refused with `reason`, took nothing, and the genuine CLI still exports.
        private func expectRefused(_ result: CommandResult, because reason: String, fixture: ReplayFixture, id: String, out: String,
                                   sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(result.status != 0, "\(result)", sourceLocation: sourceLocation)
            #expect(result.stderr.contains("apps cannot export") && result.stderr.contains(reason), "\(result)",
                    sourceLocation: sourceLocation)
            #expect(!FileManager.default.fileExists(atPath: out), sourceLocation: sourceLocation)
            #expect(fixture.daemonLog.contains("not trusted as the person"), sourceLocation: sourceLocation)
            let genuine = try fixture.replay(["recordings", "export", id, "--to", out + ".genuine.mp4"])
            #expect(genuine.status == 0 && FileManager.default.fileExists(atPath: out + ".genuine.mp4"), "\(genuine)",
                    sourceLocation: sourceLocation)
        }

        /// Runs the attacker's `script`, which tries to export the recording to `$OUT`, and
        /// expects it refused because of `reason`.
        @discardableResult
        private func expectExportRefused(_ script: String, because reason: String, fixture: ReplayFixture, id: String,
                                         sourceLocation: SourceLocation = #_sourceLocation) throws -> CommandResult {
            let out = scratch(fixture, "stolen.mp4")
            let result = try attack(script, fixture: fixture, id: id, out: out)
            try expectRefused(result, because: reason, fixture: fixture, id: id, out: out, sourceLocation: sourceLocation)
            return result
        }

        private func scratch(_ fixture: ReplayFixture, _ name: String) -> String {
            fixture.directory.appendingPathComponent(name).path
        }

        @Test func anotherProgramBoundOverReplayInAUserAndMountNamespace() throws {
            let (fixture, id) = try storeWithARecording()
            defer { fixture.stop() }
            // The attacker's own program: a copy stands in for anything that speaks the protocol.
            let impostor = scratch(fixture, "impostor")
            try FileManager.default.copyItem(atPath: ReplayFixture.replay, toPath: impostor)
            try expectExportRefused("""
                exec unshare -Urm sh -c 'mount --bind "$0" "$REPLAY" && exec "$REPLAY" recordings export "$ID" --to "$OUT" --socket "$SOCKET"' \(impostor)
                """, because: "another user or mount namespace", fixture: fixture, id: id)
        }

        @Test func aFolderBoundOverReplaysFolder() throws {
            let (fixture, id) = try storeWithARecording()
            defer { fixture.stop() }
            let folder = scratch(fixture, "evil")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: ReplayFixture.replay, toPath: folder + "/replay")
            try expectExportRefused("""
                exec unshare -Urm sh -c 'mount --bind "$0" "$(dirname "$REPLAY")" && exec "$REPLAY" recordings export "$ID" --to "$OUT" --socket "$SOCKET"' \(folder)
                """, because: "another user or mount namespace", fixture: fixture, id: id)
        }

        @Test func codePreloadedIntoTheRealReplay() throws {
            let (fixture, id) = try storeWithARecording()
            defer { fixture.stop() }
            // The attacker's library runs inside the genuine replay before its main.
            let source = scratch(fixture, "evil.c"), library = scratch(fixture, "evil.so"), marker = scratch(fixture, "evil-ran")
            try """
                #include <stdio.h>
                __attribute__((constructor)) static void inside(void) { FILE *f = fopen("\(marker)", "w"); if (f) fclose(f); }
                """.write(toFile: source, atomically: true, encoding: .utf8)
            let compiler = ["/usr/bin/cc", "/opt/swift/usr/bin/clang"].first { FileManager.default.isExecutableFile(atPath: $0) }
            let built = try Command.run(try #require(compiler, "no C compiler"), ["-shared", "-fPIC", "-o", library, source])
            try #require(built.status == 0, "\(built)")
            // 9 KB of environment first: the variable lies past the first page of /proc/PID/environ.
            let result = try expectExportRefused("""
                exec env PADDING="$(printf '%09000d' 0)" LD_PRELOAD=\(library) "$REPLAY" recordings export "$ID" --to "$OUT" --socket "$SOCKET"
                """, because: "LD_PRELOAD", fixture: fixture, id: id)
            #expect(FileManager.default.fileExists(atPath: marker), "the attacker's code did not run: \(result)")
        }

        @Test func theRealReplayInAnAppsBubblewrapSandboxWithTheSocketBoundIn() throws {
            let (fixture, id) = try storeWithARecording()
            defer { fixture.stop() }
            try expectExportRefused("""
                exec bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-user --unshare-pid --unshare-ipc \
                  --ro-bind "$(dirname "$REPLAY")" "$(dirname "$REPLAY")" --bind "$(dirname "$SOCKET")" "$(dirname "$SOCKET")" \
                  -- "$REPLAY" recordings export "$ID" --to "$OUT" --socket "$SOCKET"
                """, because: "another user or mount namespace", fixture: fixture, id: id)
        }

        @Test func theBindTrickAgainstTheSystemDaemon() throws {
            let (fixture, id) = try storeWithARecording(system: true)
            defer { fixture.stop() }
            // Python bound over replay's path, speaking the protocol itself (docs/protocol.md).
            let impostor = scratch(fixture, "impostor.py")
            try """
                import json, os, socket, struct, sys
                s = socket.socket(socket.AF_UNIX); s.connect(os.environ["SOCKET"])
                def send(message):
                    data = json.dumps(message).encode(); s.sendall(struct.pack("<II", len(data), 0) + data)
                def receive():
                    def exactly(n):
                        data = b""
                        while len(data) < n:
                            chunk = s.recv(n - len(data))
                            if not chunk: sys.exit("connection closed")
                            data += chunk
                        return data
                    j, b = struct.unpack("<II", exactly(8)); data = exactly(j + b)
                    return json.loads(data[:j]), data[j:]
                send({"hello": {"protocolVersion": 2, "client": "replay"}}); receive()
                send({"exportRecording": {"id": os.environ["ID"]}})
                event, _ = receive()
                if "error" not in event:
                    with open(os.environ["OUT"], "wb") as out:
                        while "exportEnd" not in event:
                            event, body = receive(); out.write(body)
                    sys.exit(0)
                sys.exit("error: " + event["error"]["message"])
                """.write(toFile: impostor, atomically: true, encoding: .utf8)
            let python = try FileManager.default.destinationOfSymbolicLink(atPath: "/usr/bin/python3")
            try expectExportRefused("""
                exec unshare -Urm sh -c 'mount --bind "/usr/bin/$0" "$REPLAY" && exec "$REPLAY" "$1"' \(python) \(impostor)
                """, because: "another user or mount namespace", fixture: fixture, id: id)
        }
    }
}
