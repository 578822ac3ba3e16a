import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// libopenreplaykit, the app SDK for C and other languages, against a real replayd: its
    /// interface on its own under AddressSanitizer, the C and the Python examples, and the
    /// memory it adds to an app.
    @Suite struct CLibrary {
        /// The repository (docs/ at its root, the library and its tests in system/).
        static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        static let header = root.appendingPathComponent("system/Sources/COpenReplayKit/include")
        static let library = VirtualDesktop.siblingExecutable("libopenreplaykit.so")

        /// A policy that lets `apps` capture without asking; every other app is refused.
        static func policy(allowing apps: [String], in fixture: ReplayFixture) throws -> [String] {
            let policy = fixture.file("policy.json")
            let entries = apps.map { "\(String(reflecting: $0)): \"allow\"" }.joined(separator: ", ")
            try Data(#"{"default": "deny", "apps": {\#(entries)}}"#.utf8).write(to: policy)
            return ["--consent-policy", policy.path]
        }

        /// A folder with the built library under the names the package installs: its soname
        /// (what programs load) and the link `-lopenreplaykit` finds.
        static func libraryDirectory(in fixture: ReplayFixture) throws -> URL {
            try #require(FileManager.default.fileExists(atPath: library.path), "build the library first: swift build --product openreplaykit")
            let directory = fixture.file("lib")
            if !FileManager.default.fileExists(atPath: directory.path) {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("libopenreplaykit.so.1").path,
                                                           withDestinationPath: library.path)
                try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("libopenreplaykit.so").path,
                                                           withDestinationPath: "libopenreplaykit.so.1")
            }
            return directory
        }

        /// Compiles C `sources` against the header and the built library into `output`.
        static func compile(_ sources: [String], to output: URL, flags: [String] = [], in fixture: ReplayFixture) throws {
            let directory = try libraryDirectory(in: fixture)
            let arguments = ["-fuse-ld=lld", "-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-I", header.path] + flags + sources
                + ["-o", output.path, "-L", directory.path, "-lopenreplaykit", "-lxcb", "-lpthread", "-Wl,-rpath," + directory.path]
            let result = try fixture.run(Command.which("clang"), arguments, timeout: 120)
            try #require(result.status == 0, "clang \(arguments.joined(separator: " ")):\n\(result)")
        }

        /// The library's shape: the soname of its major version, and exactly the header's functions exported.
        @Test func theLibraryExportsExactlyTheHeadersCallsUnderItsSoname() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            let dynamic = try fixture.run(Command.which("readelf"), ["-d", Self.library.path])
            #expect(dynamic.stdout.contains("Library soname: [libopenreplaykit.so.1]"), "\(dynamic)")
            let symbols = try fixture.run(Command.which("nm"), ["-D", "--defined-only", Self.library.path]).stdout
            let exported = Set(symbols.split(separator: "\n").compactMap { line -> String? in
                let name = line.split(separator: " ").last.map(String.init) ?? ""
                return name.hasPrefix("ork_") ? name : nil
            })
            let text = try String(contentsOf: Self.header.appendingPathComponent("openreplaykit.h"), encoding: .utf8)
            let declared = Set(text.matches(of: /\b(ork_[a-z_]+)\(/).map { String($0.1) })
            #expect(declared.count >= 26, "\(declared.sorted())")
            let extra = exported.subtracting(declared).sorted(), missing = declared.subtracting(exported).sorted()
            #expect(exported == declared, "exported, not declared: \(extra); declared, not exported: \(missing)")
        }

        /// The C pages' programs compile and link against the header and the library, and the
        /// Python page's snippets parse, so the documentation cannot drift from the interface.
        @Test func theDocsProgramsBuild() throws {
            let fixture = try ReplayFixture(desktop: nil)
            defer { fixture.stop() }
            let page = try String(contentsOf: Self.root.appendingPathComponent("docs/c-library.md"), encoding: .utf8)
            let programs = page.matches(of: /```c\n(.*?)```/.dotMatchesNewlines()).map { String($0.1) }
            #expect(!programs.isEmpty)
            for (index, program) in programs.enumerated() {
                let source = fixture.file("doc\(index).c")
                try program.write(to: source, atomically: true, encoding: .utf8)
                try Self.compile([source.path, "-Wno-unused-parameter"], to: fixture.file("doc\(index)"), in: fixture)
            }
            let python = try String(contentsOf: Self.root.appendingPathComponent("docs/python.md"), encoding: .utf8)
            let snippets = python.matches(of: /```python\n(.*?)```/.dotMatchesNewlines()).map { String($0.1) }
            #expect(snippets.count >= 3)
            for (index, snippet) in snippets.enumerated() {
                let file = fixture.file("doc\(index).py")
                try snippet.write(to: file, atomically: true, encoding: .utf8)
                let parsed = try fixture.run("/usr/bin/python3", ["-m", "py_compile", file.path])
                #expect(parsed.status == 0, "docs/python.md, snippet \(index + 1): \(parsed)")
            }
        }

        /// Every call, every error and misuse (NULLs, made-up and freed handles, a callback that
        /// blocks, one that frees its own client), in C built with AddressSanitizer; then the
        /// same program refused by the person's policy.
        @Test func everyCallErrorAndMisuseUnderAddressSanitizer() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            let program = fixture.file("api_test")
            try Self.compile([Self.root.appendingPathComponent("system/Tests/CLibrary/api_test.c").path], to: program,
                             flags: ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"], in: fixture)
            try fixture.startDaemon(Self.policy(allowing: [program.path], in: fixture) + Broadcast.installExtensions(in: fixture))
            // The preview and the picker are offered to the person's agent.
            let agent = try fixture.startConsentAgent(["--json"])
            defer { agent.process.terminate(grace: 2) }
            let other = try fixture.startApp(["--no-protect", "--geometry", "400,300,100,100", "--stay", "120"])
            defer { other.process.terminate() }
            let window = try #require(other.waitForJSONLine { $0["event"] as? String == "window" }?["id"] as? Int, "\(other.outputSoFar)")

            // LeakSanitizer too: what the program allocates through the library (error objects,
            // the library's C strings) must all be freed.
            let sanitizer = ["ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:halt_on_error=1", "UBSAN_OPTIONS": "halt_on_error=1"]
            let result = try Command.run(program.path, [fixture.socket, String(window)], environment: fixture.environment(sanitizer),
                                         timeout: 240)
            print(result.stdout)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(3000))")
            #expect(result.stdout.contains("\n0 failures"), "\(result.stdout)")
            #expect(!result.stderr.contains("AddressSanitizer") && !result.stderr.contains("runtime error"), "\(result.stderr)")

            // The same program at another path is another app, which the policy refuses.
            let refused = fixture.file("api_test-refused")
            try FileManager.default.copyItem(at: program, to: refused)
            let declined = try Command.run(refused.path, [fixture.socket, "--declined"], environment: fixture.environment(sanitizer),
                                           timeout: 120)
            #expect(declined.status == 0 && declined.stdout.contains("\n0 failures"), "\(declined)")
        }

        /// Builds the C example as its users would, through pkg-config, with openreplaykit.pc as
        /// the package installs it but pointing at the build tree.
        static func buildCExample(in fixture: ReplayFixture) throws -> URL {
            let prefix = fixture.file("prefix")
            try FileManager.default.createDirectory(at: prefix.appendingPathComponent("pkgconfig"), withIntermediateDirectories: true)
            let template = try String(contentsOf: Self.root.appendingPathComponent("system/Sources/COpenReplayKit/openreplaykit.pc.in"), encoding: .utf8)
            let directory = try Self.libraryDirectory(in: fixture)
            try template.replacingOccurrences(of: "@PREFIX@", with: prefix.path)
                .replacingOccurrences(of: "@LIBDIR@", with: directory.path)
                .replacingOccurrences(of: "@INCLUDEDIR@", with: Self.header.path)
                .replacingOccurrences(of: "@VERSION@", with: "0")
                .write(to: prefix.appendingPathComponent("pkgconfig/openreplaykit.pc"), atomically: true, encoding: .utf8)
            let flags = try Command.run(Command.which("pkg-config"), ["--cflags", "--libs", "openreplaykit", "xcb"],
                                        environment: ["PKG_CONFIG_PATH": prefix.appendingPathComponent("pkgconfig").path])
            try #require(flags.status == 0, "\(flags)")
            let example = fixture.file("c-recorder")
            let arguments = [Self.root.appendingPathComponent("system/Examples/C/c-recorder.c").path, "-std=c11", "-Wall", "-Werror", "-o", example.path]
                + flags.stdout.split(whereSeparator: \.isWhitespace).map(String.init)
                + ["-fuse-ld=lld", "-lpthread", "-Wl,-rpath," + directory.path]
            let built = try fixture.run(Command.which("clang"), arguments, timeout: 120)
            try #require(built.status == 0, "\(built)")
            return example
        }

        /// The C example: a window of its own, protected secret, in-app capture of its blue
        /// window, a recording of it with the preview offered.
        @Test func theCExampleSharesAndRecordsItself() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            let example = try Self.buildCExample(in: fixture)
            try fixture.startDaemon(Self.policy(allowing: [example.path], in: fixture))
            let agent = try fixture.startConsentAgent(["--json"])
            defer { agent.process.terminate(grace: 2) }

            let run = try fixture.run(example.path, ["--socket", fixture.socket, "--share-frames", "10", "--record", "2"], timeout: 120)
            #expect(run.status == 0, "\(run)\n\(fixture.daemonLog.suffix(3000))")
            try Self.expectSharedBlueWindowAndRecording(run.jsonLines, agent: agent, output: run.stdout)
        }

        /// The C example shares its own windows through the broadcast picker, the `file`
        /// extension's folder filled in by the app; the person starts it on the picker's page;
        /// the app follows it live, pauses, resumes and finishes it, seeing its state, never its pictures.
        @Test func theCExampleGoesLiveThroughThePickerWithItsSetup() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            let example = try Self.buildCExample(in: fixture)
            let output = fixture.file("out")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            try fixture.startDaemon(Broadcast.installExtensions(in: fixture))
            let agent = try fixture.startConsentAgent(["--json"])
            defer { agent.process.terminate(grace: 2) }
            let app = try fixture.start(example.path, ["--socket", fixture.socket, "--go-live", "file", "--setup", "dir=\(output.path)",
                                                      "--seconds", "2"])
            defer { app.process.terminate() }
            let offer = try #require(agent.waitForJSONLine { $0["pickerOffered"] != nil }, "\(agent.outputSoFar)\n\(app.outputSoFar)")
            let url = try #require(((offer["pickerOffered"] as? [String: Any])?["offer"] as? [String: Any])?["pageURL"] as? String)
            let browser = try HeadlessBrowser()
            defer { browser.stop() }
            let page = try browser.open(url)
            #expect(try page.evaluate("document.getElementById('scope').dataset.scope") as? String == "app")
            #expect(try page.evaluate("document.getElementById('setup-file-dir').value") as? String == output.path)
            try page.click("#start")
            try page.waitUntil("document.getElementById('result') !== null && document.getElementById('result').textContent === 'Live'",
                               timeout: 30)

            let result = app.finish(timeout: 60)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(3000))")
            let states = result.jsonLines.filter { $0["event"] as? String == "broadcast" }.compactMap { $0["state"] as? String }
            let firstLive = states.firstIndex(of: "live") ?? states.count, paused = states.firstIndex(of: "paused") ?? -1
            #expect(firstLive < paused && states[paused...].contains("live") && states.last == "finished", "\(result.stdout)")
            #expect(result.jsonLines.contains { $0["event"] as? String == "broadcast" && $0["extension"] as? String == "file" })
            let written = (try? FileManager.default.contentsOfDirectory(atPath: output.path)) ?? []
            #expect(!written.isEmpty, "the file extension wrote nothing into \(output.path)")
        }

        /// The C example shares itself into a video call (a Janus VideoRoom room) through the
        /// picker: the app fills in the call's server, room and name, the person types the pin;
        /// a participant sees the app's green window, its protected red one black, and nothing
        /// else of the screen; the app sees the extension's "published".
        @Test func theCExampleSharesItselfIntoACallThroughThePicker() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480))
            defer { fixture.stop() }
            let example = try Self.buildCExample(in: fixture)
            let janus = try JanusServer(in: fixture.directory)
            defer { janus.close() }
            try fixture.startDaemon(VideoRoom.installExtension(in: fixture))
            let agent = try fixture.startConsentAgent(["--json"])
            defer { agent.process.terminate(grace: 2) }
            let app = try fixture.start(example.path, ["--socket", fixture.socket, "--colour", "00ff00", "--go-live", "videoroom",
                                                      "--setup", "url=\(janus.url)", "--setup", "room=\(janus.room)",
                                                      "--setup", "display=C recorder", "--seconds", "20"])
            defer { app.process.terminate() }
            let offer = try #require(agent.waitForJSONLine { $0["pickerOffered"] != nil }, "\(agent.outputSoFar)\n\(app.outputSoFar)")
            let url = try #require(((offer["pickerOffered"] as? [String: Any])?["offer"] as? [String: Any])?["pageURL"] as? String)
            let browser = try HeadlessBrowser()
            defer { browser.stop() }
            let picker = try browser.open(url)
            #expect(try picker.evaluate("document.getElementById('setup-videoroom-url').value") as? String == janus.url)
            #expect(try picker.evaluate("document.getElementById('setup-videoroom-display').value") as? String == "C recorder")
            let participant = try browser.open(try janus.participantPage(display: "C recorder"))
            _ = try picker.evaluate("document.getElementById('setup-videoroom-pin').value = \(String(reflecting: janus.pin))")
            try picker.click("#start")
            // The extension's GStreamer pipeline and its join take seconds, many more on a loaded machine.
            do {
                try picker.waitUntil("document.getElementById('result') !== null && document.getElementById('result').textContent === 'Live'",
                                     timeout: 90)
            } catch {
                Issue.record("the picker: \((try? picker.text()) ?? "?")\napp: \(app.outputSoFar)\n\(fixture.daemonLog.suffix(4000))")
                throw error
            }

            try participant.waitUntil("window.call && window.call.pc !== null", timeout: 30)
            _ = try participant.evaluate(WebRTC.installProbe)
            try participant.waitUntil("(async () => (await (\(WebRTC.inbound("window.call.pc"))))[0] > 30)()", timeout: 30)
            // The app's window (0,0 320x240) green; its protected secret (340,0
            // 320x240) and the rest of the screen black.
            try InAppBroadcast.expectOnlyTheAppsGreenWindow(participant, inside: [(100, 150), (30, 120), (280, 200)],
                                                            outside: [(500, 120), (400, 300), (320, 460), (600, 40)])

            let result = app.finish(timeout: 90)
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(3000))")
            let calls = result.jsonLines.compactMap { ($0["info"] as? [String: Any])?["janus"] as? String }
            #expect(calls.contains("published"), "\(result.stdout)")
            #expect(result.jsonLines.last { $0["event"] as? String == "broadcast" }?["state"] as? String == "finished", "\(result.stdout)")
        }

        /// The Python example (ctypes, Tk), against the same daemon.
        @Test func thePythonExampleSharesAndRecordsItself() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            let python = URL(fileURLWithPath: "/usr/bin/python3").resolvingSymlinksInPath().path
            try fixture.startDaemon(Self.policy(allowing: [python], in: fixture))
            let agent = try fixture.startConsentAgent(["--json"])
            defer { agent.process.terminate(grace: 2) }
            let run = try fixture.run(python, [Self.root.appendingPathComponent("system/Examples/Python/recorder.py").path,
                                               "--library", Self.library.path, "--socket", fixture.socket,
                                               "--share-frames", "10", "--record", "2"], timeout: 120)
            #expect(run.status == 0, "\(run)\n\(fixture.daemonLog.suffix(3000))")
            try Self.expectSharedBlueWindowAndRecording(run.jsonLines, agent: agent, output: run.stdout)
        }

        /// What both examples print: their secret protected, the capture state following the
        /// capture and the recording, pictures where their blue window is blue and their red,
        /// protected one black, and a recording whose preview went to the person's agent.
        static func expectSharedBlueWindowAndRecording(_ lines: [[String: Any]], agent: RunningCommand, output: String) throws {
            let events = lines.compactMap { $0["event"] as? String }
            #expect(events.contains("protected"), "\(output)")
            let shared = try #require(lines.first { $0["event"] as? String == "shared" }, "\(output)")
            #expect(shared["frames"] as? Int == 10)
            // I420, BT.601 video range: blue is U 240, V 110; black is Y 16, U and V 128.
            let window = shared["window"] as? [Double] ?? [], secret = shared["secret"] as? [Double] ?? []
            #expect(window.count == 3 && window[1] > 200 && window[2] < 125, "the app's window is not blue in its pictures: \(shared)")
            #expect(secret.count == 3 && secret[0] < 24 && abs(secret[1] - 128) < 8 && abs(secret[2] - 128) < 8,
                    "the protected window is not black in the app's own pictures: \(shared)")
            let recorded = try #require(lines.first { $0["event"] as? String == "recorded" }, "\(output)")
            #expect((recorded["duration"] as? Double ?? 0) > 1 && (recorded["frames"] as? Int ?? 0) > 0, "\(recorded)")
            #expect(events.contains("previewShown"), "\(output)")
            #expect(agent.waitForJSONLine { ($0["previewOffered"] as? [String: Any]) != nil } != nil, "\(agent.outputSoFar)")
            let captured = lines.filter { $0["event"] as? String == "captureState" }.compactMap { $0["captured"] as? Bool }
            #expect(captured.first == false && captured.contains(true), "\(output)")
        }

        /// The memory libopenreplaykit adds to an app: anonymous RSS of a tiny C program
        /// before it loads the library, once loaded, and with a client connected and watching.
        @Test func theMemoryTheLibraryAddsToAnApp() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            let probe = fixture.file("memory_probe")
            let built = try fixture.run(Command.which("clang"), [Self.root.appendingPathComponent("system/Tests/CLibrary/memory_probe.c").path,
                                                                 "-fuse-ld=lld", "-std=c11", "-Wall", "-Werror", "-I", Self.header.path,
                                                                 "-o", probe.path, "-ldl"])
            try #require(built.status == 0, "\(built)")
            try fixture.startDaemon()
            let run = try fixture.run(probe.path, [Self.library.path, fixture.socket])
            try #require(run.status == 0, "\(run)")
            let figures = try #require(run.jsonLines.first, "\(run)")
            let bare = figures["bareKB"] as? Int ?? 0, loaded = figures["loadedKB"] as? Int ?? 0, client = figures["clientKB"] as? Int ?? 0
            let bareTotal = figures["bareRSSKB"] as? Int ?? 0, clientTotal = figures["clientRSSKB"] as? Int ?? 0
            print("libopenreplaykit: anonymous RSS \(bare) kB bare, \(loaded) kB with the library loaded (+\(loaded - bare) kB), "
                  + "\(client) kB with a client watching the capture state (+\(client - bare) kB); "
                  + "VmRSS (shared pages too) \(bareTotal) kB bare, \(clientTotal) kB with the client")
            #expect(bare > 0 && loaded >= bare && client >= loaded, "\(figures)")
            #expect(figures["watching"] as? Bool == true, "\(figures)")
        }
    }
}
