import ArgumentParser
import FoundationEssentials
import ReplayIPC
import ReplaySystem
import Synchronization
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
                        if !json { printError("\(VisibleText.of(offer.executable)) asks you to look at recording \(offer.recordingID):\n  \(offer.pageURL)") }
                        if open { openInBrowser(offer.pageURL) }
                    case .pickerOffered(let offer):
                        if !json {
                            let what = offer.scope == .app ? "with its own windows" : "with your whole screen"
                            printError("\(VisibleText.of(offer.executable)) wants to go live \(what); pick a broadcast service:\n  \(offer.pageURL)")
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

        /// The app as the desktop names it (its `.desktop` entry) and as the kernel does, control
        /// characters shown, not obeyed: a name cannot rewrite the question on the person's terminal.
        private func describe(_ prompt: ConsentPrompt) {
            printError("""

                \(prompt.appName.map { "\(VisibleText.of($0)): " } ?? "")\(VisibleText.of(prompt.executable)) (process \(prompt.pid), user \(prompt.uid))
                wants to capture \(prompt.capturedThings).
                \(prompt.pageURL.map { "Or answer on the page: \($0)" } ?? "")
                """)
        }

        private func ask() -> Bool {
            StandardStreams.writeError("Allow? [y/N] ")
            guard let line = readLine() else { return false }
            return ["y", "yes"].contains(line.trimmingSpaces().lowercased())
        }

        private func printJSON(_ event: DaemonEvent) {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            guard let data = try? encoder.encode(event) else { return }
            StandardStreams.writeOutput(data + Data("\n".utf8))
        }

        private func openInBrowser(_ url: String) { BrowserQueue.shared.open(url) }
    }
}

/// Opens pages one at a time: the next once the browser started for the last has exited,
/// and every browser is reaped. An app that asks thirty times no longer starts thirty
/// browsers at once, nor leaves thirty zombies behind.
final class BrowserQueue: Sendable {
    static let shared = BrowserQueue()
    /// Pages waiting for their turn, past which more are only listed on the terminal.
    static let limit = 16

    private let state = Mutex((running: false, waiting: [String]()))

    func open(_ url: String) {
        let startNow = state.withLock { state -> Bool in
            if !state.running {
                state.running = true
                return true
            }
            guard state.waiting.count < Self.limit else { return false }
            state.waiting.append(url)
            return false
        }
        if startNow { start(url) }
    }

    private func start(_ url: String) {
        do {
            let browser = try PageOpener.open(url)
            browser.onExit { [self] _ in next() }
        } catch {
            printError("cannot open the page in a browser: \(error)")
            next()
        }
    }

    private func next() {
        let url = state.withLock { state -> String? in
            guard !state.waiting.isEmpty else {
                state.running = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        if let url { start(url) }
    }
}
