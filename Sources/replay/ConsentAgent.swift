import ArgumentParser
import Foundation
import ReplayIPC
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

extension Replay {
    struct ConsentAgent: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "consent-agent",
            abstract: "Answer apps that ask replayd to capture the screen, and show their previews.",
            discussion: """
                While it runs, replayd sends it every app's request to capture: which app (by the \
                executable the kernel reports, not the app's own word) and what it would capture. \
                On a terminal it asks you; each request also has a loopback page with Allow and \
                Don't Allow, whose address only agents see. An app's request to show a preview \
                arrives here too, as a page address. Each address opens its page once, in the \
                first browser that follows it, and expires unused (consent: when the app stops \
                waiting; preview: 5 minutes; picker: 10 minutes).

                Examples:
                  replay consent-agent                 (ask on this terminal)
                  replay consent-agent --open          (open each page in your browser)
                  replay consent-agent --json          (print each request as JSON; answer on the page)
                """)

        @OptionGroup var daemon: DaemonOptions

        @Flag(help: "Print each event as one JSON line and never answer here (scripts; answer on the page).")
        var json = false

        @Flag(help: "Open consent, preview and picker pages with xdg-open (or $BROWSER), through a private redirect file: page addresses never appear on a command line.")
        var open = false

        func run() throws {
            do {
                let channel = try DaemonClient.connect(socket: daemon.socket)
                try channel.send(ClientRequest.registerConsentAgent)
                guard case .consentAgentRegistered = try DaemonClient.next(channel).message else {
                    throw DaemonClient.Failure(description: "unexpected reply from replayd")
                }
                if !json { printError("Waiting for apps that ask to capture. Ctrl-C to stop.") }
                let interactive = !json && isatty(0) == 1
                while true {
                    let event = try DaemonClient.next(channel).message
                    if json { printJSON(event) }
                    switch event {
                    case .consentRequested(let prompt):
                        if !json { describe(prompt) }
                        if open, let url = prompt.pageURL { openInBrowser(url) }
                        if interactive { try channel.send(ClientRequest.answerConsent(requestID: prompt.requestID, allow: ask())) }
                    case .consentResolved(_, let allowed):
                        if !json { printError(allowed ? "Allowed." : "Declined.") }
                    case .previewOffered(let offer):
                        if !json { printError("\(offer.executable) asks you to look at recording \(offer.recordingID):\n  \(offer.pageURL)") }
                        if open { openInBrowser(offer.pageURL) }
                    case .pickerOffered(let offer):
                        if !json {
                            let what = offer.scope == .app ? "with its own windows" : "with your whole screen"
                            printError("\(offer.executable) wants to go live \(what); pick a broadcast service:\n  \(offer.pageURL)")
                        }
                        if open { openInBrowser(offer.pageURL) }
                    default:
                        break
                    }
                }
            } catch {
                printError("error: \(error)")
                throw ExitCode.failure
            }
        }

        private func describe(_ prompt: ConsentPrompt) {
            printError("""

                \(prompt.executable) (process \(prompt.pid), user \(prompt.uid))
                wants to capture \(prompt.capturedThings).
                \(prompt.pageURL.map { "Or answer on the page: \($0)" } ?? "")
                """)
        }

        private func ask() -> Bool {
            FileHandle.standardError.write(Data("Allow? [y/N] ".utf8))
            guard let line = readLine() else { return false }
            return ["y", "yes"].contains(line.trimmingCharacters(in: .whitespaces).lowercased())
        }

        private func printJSON(_ event: DaemonEvent) {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            guard let data = try? encoder.encode(event) else { return }
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        }

        private func openInBrowser(_ url: String) {
            do {
                try PageOpener.open(url)
            } catch {
                printError("cannot open the page in a browser: \(error)")
            }
        }
    }
}

/// Opens a loopback page in the person's browser without putting its address on a command
/// line: every user can read command lines (`ps`, /proc/PID/cmdline), and the address holds
/// the page's one-time link. The browser gets the path of a redirect file instead, mode 0600
/// in the person's private runtime folder, that sends it on to the page.
enum PageOpener {
    /// Redirect files older than this are removed when the next page opens: by then the
    /// browser has followed them, and their links are spent or expired.
    static let keep: TimeInterval = 600

    static func open(_ url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let browser = environment["BROWSER"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/bin/xdg-open"
        let file = try redirectFile(to: url, environment: environment)
        do {
            _ = try ChildProcess(path: browser, arguments: [file.path], environment: environment)
        } catch {
            try? FileManager.default.removeItem(at: file)
            throw DaemonClient.Failure(description: "cannot run \(browser): \(error)")
        }
    }

    /// Writes the page that redirects to `url`, readable by this user alone, and returns its path.
    static func redirectFile(to url: String, environment: [String: String]) throws -> URL {
        let runtime = ReplayPaths.runtimeDirectory(environment: environment)
        let directory = runtime.appendingPathComponent("pages")
        try ReplayPaths.makePrivateDirectory(runtime)
        try ReplayPaths.makePrivateDirectory(directory)
        removeStale(in: directory)
        let file = directory.appendingPathComponent("page-\(UUID().uuidString).html")
        let escaped = url.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        let html = """
            <!doctype html>
            <html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
            <meta http-equiv="refresh" content="0; url=\(escaped)"><title>OpenReplayKit</title></head>
            <body><p><a href="\(escaped)">Continue to the page</a></p></body></html>

            """
        // O_EXCL | O_NOFOLLOW: a fresh file of ours, never one somebody put in its place.
        let fd = Glibc.open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DaemonClient.Failure(description: "cannot write \(file.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(html.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else {
            try? FileManager.default.removeItem(at: file)
            throw DaemonClient.Failure(description: "cannot write \(file.path): \(String(cString: strerror(errno)))")
        }
        return file
    }

    private static func removeStale(in directory: URL) {
        let files = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: [.contentModificationDateKey])) ?? []
        for file in files where file.pathExtension == "html" {
            let modified = (try? file.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast
            if Date().timeIntervalSince(modified) > keep { try? FileManager.default.removeItem(at: file) }
        }
    }
}
