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
    /// Issue 15, "no secrets on command lines, tokens that die", tested as the attacker would:
    /// another user of the computer reads every process's command line and tries what it
    /// finds; links are used twice, late, from another host name or another site's form; a
    /// picker is pushed to start more than its one broadcast and to stop the person's.
    @Suite struct SecretsAttacks {
        /// Every Debian has this account; the other privacy tests use it as "another user" too.
        static let otherUser = "nobody"

        // MARK: another user reading command lines

        @Test func anotherUserReadingCommandLinesCannotAnswerTheConsentPageTheAgentOpens() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            let attacker = Attacker(fixture)
            try fixture.startDaemon()
            let browserScript = try Self.sleepingBrowser(in: fixture)
            let agent = try fixture.startConsentAgent(["--open"], environment: ["BROWSER": browserScript.script])
            defer { agent.process.terminate() }

            let app = try fixture.startApp(["--no-protect", "--geometry", "0,0,200,200", "--share-frames", "1"])
            defer { app.process.terminate() }
            let opened = try #require(browserScript.waitForArgument(), "the agent opened nothing: \(agent.outputSoFar)\n\(fixture.daemonLog)")

            // What any user sees in ps while the person's browser starts.
            let seen = try attacker.commandLines()
            #expect(seen.contains { $0.contains(browserScript.script) }, "the attacker did not see the browser's command line")
            let urls = Attacker.pageURLs(in: seen)
            for url in urls {
                let (page, _) = try attacker.http(url)
                #expect(page != "200", "the attacker opened \(url)")
                let answer = try attacker.http(Attacker.withoutQuery(url), form: ["answer": "allow", "token": Attacker.token(in: url) ?? ""],
                                               origin: Attacker.origin(of: url))
                #expect(answer.status != "200", "the attacker answered \(url): \(answer.body)")
            }
            // The page's own address is in a file only the person can read.
            let redirect = URL(fileURLWithPath: opened)
            #expect(!opened.contains("token="), "the browser was given the page's address: \(opened)")
            #expect(try attacker.run("/bin/cat", [opened]).status != 0, "the attacker read \(opened)")
            #expect(Self.mode(of: redirect.path) == 0o600 && Self.mode(of: redirect.deletingLastPathComponent().path) == 0o700)

            // The person's browser follows the file to the page and declines; nothing the attacker did answered.
            #expect(app.waitForJSONLine(timeout: 2) { $0["event"] as? String == "shared" } == nil, "the app captured: \(app.outputSoFar)")
            let browser = try HeadlessBrowser()
            defer { browser.stop() }
            let page = try browser.open("file://" + opened)
            try page.waitUntil("document.getElementById('deny') !== null")
            #expect(try page.text().contains("secret-notes"))
            try page.click("#deny")
            do { try page.waitUntil("document.getElementById('result') !== null") } catch {
                Issue.record("declining failed: \(error); the page says: \((try? page.text()) ?? "?")\n\(fixture.daemonLog.suffix(2000))")
            }
            let result = app.finish(timeout: 30)
            #expect(result.status == 3 && result.stdout.contains("userDeclined"), "\(result)")
        }

        @Test func anotherUserReadingCommandLinesCannotWatchOrDeleteAPreview() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            let attacker = Attacker(fixture)
            try fixture.startDaemon(Privacy.allowExampleApp(in: fixture))
            let browserScript = try Self.sleepingBrowser(in: fixture)
            let agent = try fixture.startConsentAgent(["--open"], environment: ["BROWSER": browserScript.script])
            defer { agent.process.terminate() }

            // The app shows its replay: the agent opens the preview for the person.
            let app = try fixture.startApp(["--no-protect", "--geometry", "0,0,200,200", "--record", "1"]).finish(timeout: 30)
            let id = try #require(app.jsonLines.first { $0["event"] as? String == "recorded" }?["id"] as? String, "\(app)")
            #expect(browserScript.waitForArgument() != nil, "the agent opened nothing: \(agent.outputSoFar)")
            var seen = try attacker.commandLines()
            // The person previews it from the CLI too.
            let preview = try fixture.replay(["recordings", "preview", id, "--open"], environment: ["BROWSER": browserScript.script])
            #expect(preview.status == 0, "\(preview)")
            #expect(browserScript.waitForArgument(count: 2) != nil)
            seen += try attacker.commandLines()
            #expect(seen.filter { $0.contains(browserScript.script) }.count >= 2, "the attacker did not see the browsers: \(seen)")

            for url in Attacker.pageURLs(in: seen) {
                #expect(try attacker.http(url).status != "200", "the attacker opened \(url)")
                let path = Attacker.withoutQuery(url), token = Attacker.token(in: url) ?? ""
                let movie = try attacker.http(path + "/movie?token=" + token, keepBody: false)
                #expect(movie.status != "200" && movie.status != "206", "the attacker downloaded \(path)/movie")
                let delete = try attacker.http(path + "/delete", form: ["token": token], origin: Attacker.origin(of: url))
                #expect(delete.status != "200", "the attacker deleted through \(url)")
            }
            for file in browserScript.arguments() {
                #expect(try attacker.run("/bin/cat", [file]).status != 0, "the attacker read \(file)")
            }
            #expect(try fixture.replay(["recordings", "list", "--json"]).stdout.contains(id), "the recording is gone")
        }

        // MARK: links work once, and die

        @Test func aConsentLinkWorksOnceAndOnlyItsCookieAnswers() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 640, height: 480, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let agent = try fixture.startConsentAgent(["--json"])
            defer { agent.process.terminate() }
            let app = try fixture.startApp(["--no-protect", "--geometry", "0,0,200,200", "--share-frames", "1"])
            defer { app.process.terminate() }
            let line = try #require(agent.waitForJSONLine { Privacy.consentPrompt($0) != nil }, "\(agent.outputSoFar)")
            let url = try #require(Privacy.consentPrompt(line)?["pageURL"] as? String)

            let person = Client(fixture)
            #expect(try person.http(url).status == "200")
            // Whoever uses the link second (a copy from scrollback, history, a screen share) gets nothing.
            let thief = Client(fixture)
            #expect(try thief.http(url).status == "404")
            let answer = try thief.http(Attacker.withoutQuery(url), form: ["answer": "allow", "token": Attacker.token(in: url) ?? ""],
                                        origin: Attacker.origin(of: url))
            #expect(answer.status != "200", "a second user of the link answered: \(answer.body)")
            #expect(app.waitForJSONLine(timeout: 2) { $0["event"] as? String == "shared" } == nil, "the app captured")

            // The person, whose browser holds the page's cookie, answers.
            let allowed = try person.http(Attacker.withoutQuery(url), form: ["answer": "allow"], origin: Attacker.origin(of: url))
            #expect(allowed.status == "200" && allowed.body.contains("Allowed"), "\(allowed)")
            let result = app.finish(timeout: 30)
            #expect(result.status == 0 && result.stdout.contains("\"shared\""), "\(result)")
            // The request is over: its page is gone, cookie or not.
            #expect(try person.http(Attacker.withoutQuery(url)).status == "404")
        }

        @Test func aPreviewLinkWorksOnceAndEachRequestGetsAFreshOne() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let id = try Self.record(fixture)
            let first = try Self.previewURL(fixture, id)
            let second = try Self.previewURL(fixture, id)
            #expect(first != second, "the same link was handed out twice")

            let person = Client(fixture)
            #expect(try person.http(first).status == "200")
            #expect(try Client(fixture).http(first).status == "404", "a link opened its page twice")
            #expect(try person.http(first).status == "200", "the browser that opened it lost the page")
            let path = Attacker.withoutQuery(first)
            #expect(try person.http(path + "/movie", keepBody: false).status == "200")
            #expect(try Client(fixture).http(path + "/movie", keepBody: false).status == "404")
            #expect(try Client(fixture).http(path + "/movie?token=" + (Attacker.token(in: first) ?? ""), keepBody: false).status == "404")
            // The second link is still good, once.
            #expect(try Client(fixture).http(second).status == "200")
            #expect(try Client(fixture).http(second).status == "404")
        }

        @Test func anExpiredLinkOpensNothing() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon(environment: ["REPLAYD_PAGE_TOKEN_SECONDS": "1"])
            let id = try Self.record(fixture)
            let late = try Self.previewURL(fixture, id)
            let opened = try Self.previewURL(fixture, id)
            let person = Client(fixture)
            #expect(try person.http(opened).status == "200")
            Thread.sleep(forTimeInterval: 2)
            #expect(try Client(fixture).http(late).status == "404", "a link outlived its lifetime")
            #expect(try person.http(Attacker.withoutQuery(opened)).status == "404", "a page's cookie outlived its lifetime")
            #expect(try Client(fixture).http(try Self.previewURL(fixture, id)).status == "200")
        }

        // MARK: pickers

        @Test func aPickerStartsOneBroadcastAndCannotStopThePersonsOwn() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon(Broadcast.installExtensions(in: fixture))
            let agent = try fixture.startConsentAgent(["--json"])
            defer { agent.process.terminate() }
            let app = try fixture.startApp(["--no-protect", "--geometry", "0,0,200,200", "--go-live", "file", "--live-seconds", "60"])
            defer { app.process.terminate() }
            let offer = try #require(agent.waitForJSONLine { $0["pickerOffered"] != nil }, "\(agent.outputSoFar)\n\(app.outputSoFar)")
            let url = try #require(((offer["pickerOffered"] as? [String: Any])?["offer"] as? [String: Any])?["pageURL"] as? String)
            let output = fixture.file("out")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)

            let person = Client(fixture)
            #expect(try person.http(url).status == "200")
            #expect(try Client(fixture).http(url).status == "404", "a picker link opened twice")
            let path = Attacker.withoutQuery(url), origin = Attacker.origin(of: url)
            let form = ["extension": "file", "setup.file.dir": output.path, "token": Attacker.token(in: url) ?? ""]
            let started = try person.http(path, form: form, origin: origin)
            #expect(started.status == "200" && started.body.contains("Live"), "\(started)")
            let again = try person.http(path, form: form, origin: origin)
            #expect(!again.body.contains("Live"), "one picker started a second broadcast")
            let running = try Broadcast.status(fixture).filter { !["finished", "failed"].contains($0["state"] as? String ?? "") }
            #expect(running.count == 1, "\(running)")
            let pickerBroadcast = try #require(running.first?["id"] as? String)

            // The person goes live from the CLI; the picker's Stop, pointed at it, must not end it.
            let cli = try fixture.replay(["broadcast", "start", "--extension", "file", "--setup", "dir=\(output.path)", "--json"])
            let cliBroadcast = try #require((try JSONSerialization.jsonObject(with: Data(cli.stdout.utf8)) as? [[String: Any]])?
                .first?["id"] as? String, "\(cli)")
            _ = try person.http(path + "/stop", form: ["broadcast": cliBroadcast, "token": Attacker.token(in: url) ?? ""], origin: origin)
            let states = Dictionary(try Broadcast.status(fixture).compactMap { status in
                (status["id"] as? String).map { ($0, status["state"] as? String ?? "") }
            }, uniquingKeysWith: { $1 })
            #expect(states[cliBroadcast] == "live", "the picker's page stopped the person's broadcast: \(states)")
            #expect(["finished", "failed"].contains(states[pickerBroadcast] ?? ""), "the picker's Stop did not stop its own: \(states)")
            #expect(try fixture.replay(["broadcast", "stop", "--id", cliBroadcast]).status == 0)
        }

        // MARK: Host and Origin

        @Test func aForeignHostOrAFormFromAnotherOriginIsRefused() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon()
            let id = try Self.record(fixture)
            let url = try Self.previewURL(fixture, id)
            let port = try #require(URL(string: url)?.port)

            // DNS rebinding: a page of rebind.example, whose name now points at 127.0.0.1.
            let rebound = try Client(fixture).http(url, headers: ["Host: rebind.example:\(port)"])
            #expect(rebound.status == "403" && rebound.body.contains("127.0.0.1:\(port)"), "\(rebound)")

            let person = Client(fixture)
            #expect(try person.http(url).status == "200")
            let path = Attacker.withoutQuery(url), token = Attacker.token(in: url) ?? ""
            // Another site's form, and a request that says nothing of where it came from.
            let foreign = try person.http(path + "/delete", form: ["token": token], origin: "http://evil.example")
            #expect(foreign.status == "403" && foreign.body.contains("evil.example"), "\(foreign)")
            let anonymous = try person.http(path + "/delete", form: ["token": token], origin: nil)
            #expect(anonymous.status == "403", "\(anonymous)")
            #expect(try fixture.replay(["recordings", "list", "--json"]).stdout.contains(id), "a refused form deleted the recording")
            // The page's own form.
            let own = try person.http(path + "/delete", form: [:], origin: "http://127.0.0.1:\(port)")
            #expect(own.status == "200", "\(own)")
            #expect(!(try fixture.replay(["recordings", "list", "--json"]).stdout.contains(id)))
        }

        // MARK: stream keys

        @Test func aSecretSetupValueIsRefusedOnTheCommandLineAndNeverAppearsInOne() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240, demoScene: false))
            defer { fixture.stop() }
            let server = try RTMPServer(in: fixture.directory)
            defer { server.stop() }
            try fixture.startDaemon(Upload.installExtensions(in: fixture))
            let secret = "sk-" + UUID().uuidString.lowercased()

            let typed = try fixture.replay(["broadcast", "start", "--extension", "rtmp", "--setup", "url=\(server.ingestURL)",
                                            "--setup", "key=\(secret)"])
            #expect(typed.status != 0 && typed.stderr.contains("key=@FILE") && typed.stderr.contains("key=-"), "\(typed)")
            #expect(try Broadcast.status(fixture).isEmpty, "a secret typed on the command line was used")

            let keyFile = fixture.file("stream-key")
            try Data((secret + "\n").utf8).write(to: keyFile)
            chmod(keyFile.path, 0o600)
            let viaFile = try fixture.replay(["broadcast", "start", "--extension", "rtmp", "--setup", "url=\(server.ingestURL)",
                                              "--setup", "key=@\(keyFile.path)"])
            #expect(viaFile.status == 0, "\(viaFile)\n\(fixture.daemonLog)")
            #expect(poll(timeout: 20) { try? server.publishing(secret) } != nil, "the key did not reach the server")
            #expect(try Self.everyCommandLine().filter { $0.contains(secret) }.isEmpty, "the key is on a command line")
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            _ = try Broadcast.waitUntilOver(fixture)

            let setupFile = fixture.file("rtmp-setup")
            try Data("# the person's RTMP setup\nurl=\(server.ingestURL)\n".utf8).write(to: setupFile)
            let viaStdin = try fixture.run("/bin/sh", ["-c", "exec \"$0\" broadcast start --extension rtmp --setup-file \"$1\" --setup key=- --socket \"$2\" < \"$3\"",
                                                       ReplayFixture.replay, setupFile.path, fixture.socket, keyFile.path])
            #expect(viaStdin.status == 0, "\(viaStdin)")
            #expect(poll(timeout: 20) { try? server.publishing(secret) } != nil)
            #expect(try Self.everyCommandLine().filter { $0.contains(secret) }.isEmpty, "the key is on a command line")
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
        }

        /// An SRT passphrase (or any secret) inside a URL typed on the command line is refused
        /// before anything is sent, and the refusal says it was exposed; given as the secret
        /// setting of its own, from a file, it opens an encrypted listener and is on no
        /// command line but the listener's own.
        @Test func aSecretInsideAURLIsRefusedAndItsOwnSecretSettingWorks() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 320, height: 240))
            defer { fixture.stop() }
            let passphrase = "pp-" + UUID().uuidString.lowercased().prefix(20)
            let listener = try SRTListener(output: fixture.file("received.ts"), passphrase: String(passphrase))
            try fixture.startDaemon(Upload.installExtensions(in: fixture))

            let typed = try fixture.replay(["broadcast", "start", "--extension", "srt", "--setup", "url=\(listener.url)?passphrase=\(passphrase)"])
            #expect(typed.status != 0 && typed.stderr.contains("carries passphrase= in its URL") && typed.stderr.contains("change that secret"),
                    "\(typed)")
            #expect(try Broadcast.status(fixture).isEmpty, "a URL with a secret typed on the command line was used")
            let key = try fixture.replay(["broadcast", "start", "--extension", "rtmp", "--setup", "url=rtmp://127.0.0.1/live", "--setup", "key=sk-1"])
            #expect(key.status != 0 && key.stderr.contains("It has been readable while this command ran: change it"), "\(key)")

            let secretFile = fixture.file("srt-passphrase")
            try Data((passphrase + "\n").utf8).write(to: secretFile)
            chmod(secretFile.path, 0o600)
            let start = try fixture.replay(["broadcast", "start", "--extension", "srt", "--setup", "url=\(listener.url)",
                                            "--setup", "passphrase=@\(secretFile.path)"])
            #expect(start.status == 0, "\(start)")
            // The listener is encrypted: "live" means the passphrase arrived.
            let live = try Broadcast.waitForStatus(fixture, timeout: 15) { Upload.connection($0) == "live" }
            #expect(Upload.connection(live) == "live", "\(String(describing: try? Broadcast.latestStatus(fixture)))\n\(fixture.daemonLog.suffix(1500))")
            let listenerPID = "\(listener.command.process.pid)"
            let exposed = try Self.everyCommandLineWithPID().filter { $0.line.contains(passphrase) && $0.pid != listenerPID }
            #expect(exposed.isEmpty, "the passphrase is on a command line: \(exposed)")
            #expect(!(try Broadcast.latestStatus(fixture).map { "\($0)" } ?? "").contains(passphrase), "the status shows it")
            #expect(try fixture.replay(["broadcast", "stop"]).status == 0)
            _ = try Broadcast.waitUntilOver(fixture)
            _ = listener.finish()
        }

        // MARK: helpers

        /// A recording of the person's, one second long; its id.
        static func record(_ fixture: ReplayFixture) throws -> String {
            let recorded = try fixture.replay(["record", "--duration", "1", "--json"])
            let json = try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any]
            return try #require(json?["id"] as? String, "\(recorded)")
        }

        static func previewURL(_ fixture: ReplayFixture, _ id: String) throws -> String {
            let result = try fixture.replay(["recordings", "preview", id])
            #expect(result.status == 0, "\(result)")
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// Every process's command line with its pid.
        static func everyCommandLineWithPID() throws -> [(pid: String, line: String)] {
            let pids = try FileManager.default.contentsOfDirectory(atPath: "/proc").filter { $0.allSatisfy(\.isNumber) }
            return pids.compactMap { pid in
                FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map { (pid, String(decoding: $0, as: UTF8.self)) }
            }
        }

        /// Every process's command line, its arguments joined by spaces (read as root: all of them).
        static func everyCommandLine() throws -> [String] {
            let pids = try FileManager.default.contentsOfDirectory(atPath: "/proc").filter { $0.allSatisfy(\.isNumber) }
            return pids.compactMap { pid in
                FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map {
                    String(decoding: $0.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
                }
            }
        }

        static func mode(of path: String) -> mode_t {
            var info = stat()
            return lstat(path, &info) == 0 ? info.st_mode & 0o777 : 0
        }

        /// A `$BROWSER` that keeps its command line visible (it sleeps) and notes what it was given.
        struct SleepingBrowser {
            let script: String
            let log: String

            func arguments() -> [String] {
                ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            }

            /// The `count`th argument it was given, once the browser has started that often.
            func waitForArgument(count: Int = 1) -> String? {
                poll(timeout: 20) { arguments().count >= count ? arguments()[count - 1] : nil }
            }
        }

        static func sleepingBrowser(in fixture: ReplayFixture) throws -> SleepingBrowser {
            let script = fixture.file("browser.sh").path, log = fixture.file("browser.log").path
            // Not exec: the shell keeps the argument on its command line while it sleeps.
            try Data("#!/bin/sh\nprintf '%s\\n' \"$1\" >> \(log)\nsleep 20\n".utf8).write(to: URL(fileURLWithPath: script))
            chmod(script, 0o755)
            return SleepingBrowser(script: script, log: log)
        }

        /// curl with a cookie jar of its own: one browser.
        struct Client {
            let fixture: ReplayFixture
            let jar: String
            let user: String?

            init(_ fixture: ReplayFixture, user: String? = nil) {
                self.fixture = fixture
                self.user = user
                // The person's jar in the fixture; the other user's where it may write.
                let name = "orktest-jar-\(UUID().uuidString)"
                jar = user == nil ? fixture.file(name).path : "/tmp/\(name)"
            }

            /// GET `url`, or POST `form` with `origin` (nil: no Origin header); status and body.
            /// - Parameter keepBody: false for a movie (not text): the body is not kept.
            func http(_ url: String, form: [String: String]? = nil, origin: String? = nil, headers: [String] = [], keepBody: Bool = true)
                throws -> (status: String, body: String) {
                var arguments = ["-s", "-b", jar, "-c", jar, "-w", "\n%{http_code}"]
                if !keepBody { arguments += ["-o", "/dev/null"] }
                for header in headers { arguments += ["-H", header] }
                if let form {
                    if let origin { arguments += ["-H", "Origin: \(origin)"] }
                    arguments += ["--data", form.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
                        .joined(separator: "&")]
                    // POST even when the form is empty.
                    if form.isEmpty { arguments += ["-X", "POST"] }
                }
                let result = try fixture.run(Command.which("curl"), arguments + [url], user: user)
                let output = result.stdout
                guard let newline = output.lastIndex(of: "\n") else { return (output, "") }
                return (String(output[output.index(after: newline)...]), String(output[..<newline]))
            }
        }

        /// Another Unix user of the computer, with ps and curl.
        struct Attacker {
            let fixture: ReplayFixture
            private let client: Client

            init(_ fixture: ReplayFixture) {
                self.fixture = fixture
                client = Client(fixture, user: SecretsAttacks.otherUser)
            }

            func run(_ path: String, _ arguments: [String]) throws -> CommandResult {
                try fixture.run(path, arguments, user: SecretsAttacks.otherUser)
            }

            /// What `ps` shows this user: every process's command line.
            func commandLines() throws -> [String] {
                let result = try run("/bin/sh", ["-c", #"for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2>/dev/null; echo; done"#])
                return result.stdout.split(separator: "\n").map(String.init)
            }

            func http(_ url: String, form: [String: String]? = nil, origin: String? = nil, keepBody: Bool = true)
                throws -> (status: String, body: String) {
                try client.http(url, form: form, origin: origin, keepBody: keepBody)
            }

            /// Loopback page addresses in `lines`.
            static func pageURLs(in lines: [String]) -> [String] {
                lines.flatMap { line in
                    line.split(separator: " ").map(String.init).filter {
                        $0.hasPrefix("http://127.0.0.1:") || $0.hasPrefix("http://localhost:")
                    }
                }
            }

            static func withoutQuery(_ url: String) -> String {
                String(url.split(separator: "?", maxSplits: 1).first ?? "")
            }

            static func token(in url: String) -> String? {
                URLComponents(string: url)?.queryItems?.first { $0.name == "token" }?.value
            }

            static func origin(of url: String) -> String {
                guard let components = URLComponents(string: url), let host = components.host, let port = components.port else { return "" }
                return "http://\(host):\(port)"
            }
        }
    }
}
