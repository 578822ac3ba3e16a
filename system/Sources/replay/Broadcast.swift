import ArgumentParser
import FoundationEssentials
import ReplayIPC
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension Replay {
    struct Broadcast: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Go live through an upload extension, and control the broadcast.",
            discussion: """
                replayd captures the screen and hands raw samples to the extension, which runs \
                sandboxed (no home, no store, read-only system, 50 MiB of memory) and uploads them.

                Examples:
                  replay extensions list
                  replay broadcast start --extension rtmp --setup url=rtmp://live.example/app --setup key=@stream-key.txt
                  replay broadcast pick             (choose a service and its setup on this terminal)
                  replay broadcast status
                  replay broadcast pause | resume | stop
                """,
            subcommands: [Pick.self, Start.self, Pause.self, Resume.self, Stop.self, Status.self])
    }
}

/// Which broadcast a control command means, and how to show the result.
struct BroadcastSelection: ParsableArguments {
    @Option(help: "The broadcast's id (default: the latest).")
    var id: String?

    @Flag(help: "Print the broadcast's status as JSON.")
    var json = false
}

extension Replay.Broadcast {
    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start broadcasting through an extension.",
            discussion: """
                'replay extensions list' shows each extension's setup keys (? marks optional
                ones). A secret field (a stream key, a bearer token) never goes on the command
                line, where every user of the computer can read it: give it as KEY=@FILE (read
                from FILE), KEY=- (read from standard input) or in a --setup-file.
                For example, after 'replay broadcast start':
                  --extension rtmp --setup url=rtmp://host/app --setup key=@stream-key.txt
                  --extension rtmp --setup-file rtmp-setup.txt     (lines of KEY=VALUE)
                  --extension srt --setup url=srt://host:9000 --mic
                  --extension hls --setup dir=/srv/www/live --setup mode=screencast
                  --extension webrtc --setup viewer-port=auto
                'replay broadcast status' then shows the connection (live, reconnecting)
                and where viewers watch.
                """)

        @OptionGroup var daemon: DaemonOptions

        @Option(help: "The extension's id, as 'replay extensions list' shows it.")
        var `extension`: String

        @Option(name: .customLong("setup"), help: ArgumentHelp(
            "A setup field, KEY=VALUE (repeat for each); KEY=@FILE reads the value from FILE, KEY=- from standard input.",
            discussion: "Secret fields (a stream key) are refused as KEY=VALUE: every user can read command lines."))
        var setupPairs: [String] = []

        @Option(name: .customLong("setup-file"), help: "A file of setup fields, one KEY=VALUE a line ('#' starts a comment).")
        var setupFile: String?

        @Flag(help: "Also send the microphone.")
        var mic = false

        @Option(help: "Video frames per second to the extension (at most 30 are sent, as in ReplayKit).")
        var fps = 30

        @Flag(help: "Print the broadcast's status as JSON.")
        var json = false

        @Option(help: "Stay until the broadcast has lasted this many seconds (or Ctrl-C), then stop it. With no display this command brings its own desktop and always stays (until Ctrl-C without --duration).")
        var duration: Double?

        func validate() throws {
            for pair in setupPairs where !pair.contains("=") || pair.hasPrefix("=") {
                throw ValidationError("--setup takes KEY=VALUE, not '\(pair)'")
            }
            if !(1...60).contains(fps) { throw ValidationError("--fps must be between 1 and 60") }
            if let duration, !(duration > 0) { throw ValidationError("--duration must be more than 0 seconds") }
        }

        func run() throws {
            // No desktop at all: a virtual one of our own, as `replay record` brings; the
            // broadcast then lasts as long as this command, which the desktop lives in.
            if VirtualDesktopRun.noDesktop {
                if VirtualDesktopRun.isPrivate { throw DaemonClient.Failure(description: "the virtual desktop gave no DISPLAY") }
                if !json {
                    printError("No DISPLAY or WAYLAND_DISPLAY: starting a virtual 1920x1080 display, an audio server and the demo scene; "
                        + "the broadcast lasts until Ctrl-C\(duration.map { " or \(Self.seconds($0)) s" } ?? "").")
                }
                try VirtualDesktopRun.execInOwnDesktop()
            }
            // Only a desktop this command brought is its to keep live and to stop; in one a script
            // started it in, it returns at once, as anywhere else.
            let ownDesktop = VirtualDesktopRun.broughtItsOwn
            let privateDesktop = VirtualDesktopRun.isPrivate
            let socket = daemon.socket ?? (privateDesktop ? ProcessInfo.processInfo.environment[ReplayPaths.socketVariable] : nil)
            var channel: MessageChannel?
            defer { if ownDesktop, let channel, let socket { VirtualDesktopRun.stopPrivateDaemon(channel, socket: socket) } }
            try reportingFailure {
                let setup = try SetupValues.read(pairs: setupPairs, file: setupFile)
                try SetupValues.refuseSecretsOnCommandLine(setup, extensionID: `extension`, socket: daemon.socket)
                let request = BroadcastRequest(extensionID: `extension`, setup: setup.values, microphone: mic, fps: fps)
                let connection = try DaemonClient.connect(socket: socket, display: privateDesktop ? ProcessInfo.processInfo.environment["DISPLAY"] : nil)
                channel = connection
                try connection.send(ClientRequest.startBroadcast(request: request))
                guard case .broadcastStarted(let status) = try DaemonClient.next(connection).message else {
                    throw DaemonClient.Failure(description: "unexpected reply from replayd")
                }
                printStatus([status], json: json)
                if ownDesktop || duration != nil { try stayLive(status.id, on: connection) }
            }
        }

        /// Until `duration` has passed, Ctrl-C (or SIGTERM) comes, or the broadcast ends by
        /// itself; then stops it (the extension finishes its upload) and prints how it ended.
        private func stayLive(_ id: String, on channel: MessageChannel) throws {
            StopRequest.watch()
            let end = duration.map { Date().addingTimeInterval($0) }
            var last: BroadcastStatus?
            while !StopRequest.asked && end.map({ Date() < $0 }) ?? true {
                Threads.sleep(seconds: 0.2)
                try channel.send(ClientRequest.broadcastStatus)
                guard case .broadcasts(let list) = try DaemonClient.next(channel).message else { continue }
                last = list.first { $0.id == id }
                if let last, last.state == .finished || last.state == .failed { break }
            }
            if let running = last, running.state != .finished && running.state != .failed {
                try channel.send(ClientRequest.stopBroadcast(id: id))
                if case .broadcasts(let list) = try DaemonClient.next(channel).message { last = list.first { $0.id == id } ?? last }
            }
            if let last { printStatus([last], json: json) }
            if last?.state == .failed { throw ExitCode.failure }
        }

        static func seconds(_ value: Double) -> String { value == value.rounded() ? String(Int(value)) : String(value) }
    }

    /// Ctrl-C or SIGTERM while a broadcast is watched: asked to stop, as a flag the watch reads.
    enum StopRequest {
        static let flag = Atomic(false)
        static var asked: Bool { flag.load(ordering: .relaxed) }
        static func watch() {
            for signal in [SIGINT, SIGTERM] { Glibc.signal(signal) { _ in StopRequest.flag.store(true, ordering: .relaxed) } }
        }
    }

    /// The broadcast picker in the terminal: the same choices as the picker page.
    struct Pick: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Choose an upload extension and its setup on this terminal, then go live.")

        @OptionGroup var daemon: DaemonOptions

        @Option(help: "Offer only this extension (ReplayKit's preferredExtension).")
        var preferredExtension: String?

        func run() throws {
            do {
                let channel = try DaemonClient.connect(socket: daemon.socket)
                try channel.send(ClientRequest.listExtensions)
                guard case .extensions(let all) = try DaemonClient.next(channel).message else {
                    throw DaemonClient.Failure(description: "unexpected reply from replayd")
                }
                let choices = all.filter { preferredExtension == nil || $0.manifest.id == preferredExtension }
                guard !choices.isEmpty else {
                    throw DaemonClient.Failure(description: preferredExtension.map { "no extension '\($0)' is installed" }
                        ?? "no upload extension is installed")
                }
                for (index, info) in choices.enumerated() { printError("  \(index + 1). \(info.manifest.displayName) (\(info.manifest.id))") }
                let number = choices.count == 1 ? 1 : Int(ask("Broadcast to [1-\(choices.count)]: ") ?? "") ?? 0
                guard choices.indices.contains(number - 1) else { throw DaemonClient.Failure(description: "no such choice") }
                let manifest = choices[number - 1].manifest
                var setup: [String: String] = [:]
                for field in manifest.setupFields {
                    let answer = ask("\(field.label)\(field.required ? "" : " (optional)"): ") ?? ""
                    if !answer.isEmpty { setup[field.key] = answer }
                }
                let microphone = ["y", "yes"].contains((ask("Microphone? [y/N] ") ?? "").lowercased())
                try channel.send(ClientRequest.startBroadcast(request: BroadcastRequest(extensionID: manifest.id, setup: setup, microphone: microphone)))
                guard case .broadcastStarted(let status) = try DaemonClient.next(channel).message else {
                    throw DaemonClient.Failure(description: "unexpected reply from replayd")
                }
                printStatus([status], json: false)
                printError("Live. Stop with: replay broadcast stop")
            } catch {
                printError("error: \(error)")
                throw ExitCode.failure
            }
        }

        private func ask(_ prompt: String) -> String? {
            StandardStreams.writeError(prompt)
            return readLine()?.trimmingSpaces()
        }
    }

    struct Pause: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Pause the broadcast: the extension gets no samples until resumed.")
        @OptionGroup var daemon: DaemonOptions
        @OptionGroup var selection: BroadcastSelection
        func run() throws { try control(.pauseBroadcast(id: selection.id), socket: daemon.socket, json: selection.json) }
    }

    struct Resume: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Resume a paused broadcast.")
        @OptionGroup var daemon: DaemonOptions
        @OptionGroup var selection: BroadcastSelection
        func run() throws { try control(.resumeBroadcast(id: selection.id), socket: daemon.socket, json: selection.json) }
    }

    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End the broadcast; the extension finishes its upload.")
        @OptionGroup var daemon: DaemonOptions
        @OptionGroup var selection: BroadcastSelection
        func run() throws { try control(.stopBroadcast(id: selection.id), socket: daemon.socket, json: selection.json) }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show broadcasts: state, extension, frames sent and dropped, last error.")
        @OptionGroup var daemon: DaemonOptions
        @Flag(help: "Print a JSON array.")
        var json = false
        func run() throws { try control(.broadcastStatus, socket: daemon.socket, json: json) }
    }
}

private func control(_ request: ClientRequest, socket: String?, json: Bool = false) throws {
    try reportingFailure {
        printStatus(try DaemonClient.ask(request, socket: socket) { if case .broadcasts(let list) = $0 { list } else { nil } }, json: json)
    }
}

private func printStatus(_ list: [BroadcastStatus], json: Bool) {
    if json {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: (try? encoder.encode(list)) ?? Data(), as: UTF8.self))
        return
    }
    if list.isEmpty { print("No broadcast.") }
    // How the sandbox's network and memory are counted is said once below the list where every
    // broadcast shares it, not again on each line.
    let networks = Set(list.compactMap(\.sandboxNetwork)), countings = Set(list.compactMap(\.memoryCounting))
    let sharedNetwork = list.count > 1 && networks.count == 1 && list.allSatisfy { $0.sandboxNetwork != nil } ? networks.first : nil
    let sharedCounting = list.count > 1 && countings.count == 1 && list.allSatisfy { $0.memoryCounting != nil } ? countings.first : nil
    for status in list {
        var line = "\(status.id)  \(status.extensionID)  \(status.state.rawValue)  \(status.framesSent) frames sent, \(status.framesDropped) dropped"
        if status.scope == .app { line += "  (the host app's own windows)" }
        // What the extension said is shown with its control characters written out, not obeyed.
        let visible = VisibleText.of
        if let url = status.broadcastURL { line += "  \(visible(url))" }
        // An upload extension's connection to its server, e.g. "reconnecting", comes first.
        if let connection = status.serviceInfo["connection"] { line += "\n  connection: \(visible(connection))" }
        let details = status.serviceInfo.filter { $0.key != "connection" }.sorted { $0.key < $1.key }
        if !details.isEmpty { line += "\n  " + details.map { "\(visible($0.key)): \(visible($0.value))" }.joined(separator: ", ") }
        if let error = status.lastError { line += "\n  error: \(visible(error))" }
        if let network = status.sandboxNetwork, sharedNetwork == nil { line += "\n  extension network: \(network)" }
        if let counting = status.memoryCounting {
            line += "\n  extension memory: peak \(BroadcastLimits.mebibytes(status.extensionPeakMemory)) of "
                + "\(BroadcastLimits.mebibytes(BroadcastLimits.memory))" + (sharedCounting == nil ? ", counted by \(counting)" : "")
        }
        print(line)
    }
    if let sharedNetwork { print("Every extension's network: \(sharedNetwork)") }
    if let sharedCounting { print("Every extension's memory is counted by \(sharedCounting)") }
}

/// An extension's setup as `broadcast start` was given it, and which values were typed out
/// on the command line (and so are readable by every user in /proc/PID/cmdline).
struct SetupValues {
    var values: [String: String] = [:]
    var onCommandLine: Set<String> = []

    /// `KEY=VALUE`, `KEY=@FILE` or `KEY=-` pairs, after the lines of `file`.
    static func read(pairs: [String], file: String?) throws -> SetupValues {
        var setup = SetupValues()
        if let file {
            for line in try contents(of: file).split(whereSeparator: \.isNewline) {
                let text = line.trimmingSpaces()
                guard !text.isEmpty, !text.hasPrefix("#") else { continue }
                guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                    throw DaemonClient.Failure(description: "\(file): a line must be KEY=VALUE, not '\(text)'")
                }
                setup.values[String(text[..<equals]).trimmingSpaces()] = String(text[text.index(after: equals)...])
            }
        }
        var readStandardInput = false
        for pair in pairs {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0]), value = String(parts[1])
            if value == "-" {
                guard !readStandardInput else { throw DaemonClient.Failure(description: "only one --setup KEY=- can read standard input") }
                readStandardInput = true
                setup.values[key] = withoutFinalNewline(String(decoding: StandardStreams.readInput(), as: UTF8.self))
            } else if value.hasPrefix("@") {
                setup.values[key] = withoutFinalNewline(try contents(of: String(value.dropFirst())))
            } else {
                setup.values[key] = value
                setup.onCommandLine.insert(key)
            }
        }
        return setup
    }

    /// Refuses, before anything is sent, a secret field typed out on the command line.
    static func refuseSecretsOnCommandLine(_ setup: SetupValues, extensionID: String, socket: String?) throws {
        guard !setup.onCommandLine.isEmpty else { return }
        // A secret inside a URL (an SRT passphrase, a key in the query, a password) is one too.
        for key in setup.onCommandLine.sorted() {
            let secrets = URLSecrets.carried(by: setup.values[key] ?? "")
            guard !secrets.isEmpty else { continue }
            throw DaemonClient.Failure(description: """
                '\(key)' carries \(secrets.joined(separator: " and ")) in its URL, and every user of this computer can read a \
                command line (ps, /proc/PID/cmdline); it was not sent. It has been readable while this command ran: change that \
                secret. Give the URL without it, and the secret in the extension's own secret setting (such as --setup \
                passphrase=@FILE for SRT, key=@FILE for RTMP), read from a file only you can read or from standard input (=-)
                """)
        }
        let extensions = try DaemonClient.ask(.listExtensions, socket: socket) { if case .extensions(let list) = $0 { list } else { nil } }
        guard let manifest = extensions.first(where: { $0.manifest.id == extensionID })?.manifest else { return }
        for field in manifest.setupFields where field.kind == .secret && setup.onCommandLine.contains(field.key) {
            throw DaemonClient.Failure(description: """
                '\(field.key)' (\(field.label)) is a secret, and every user of this computer can read a command line \
                (ps, /proc/PID/cmdline); it was not sent. It has been readable while this command ran: change it. Pass it as --setup \(field.key)=@FILE (read from a file only you can read), \
                --setup \(field.key)=- (read from standard input), or as a line \(field.key)=VALUE in --setup-file FILE
                """)
        }
    }

    private static func contents(of path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DaemonClient.Failure(description: "cannot read \(path)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    private static func withoutFinalNewline(_ text: String) -> String {
        var text = text
        while text.last?.isNewline == true { text.removeLast() }
        return text
    }
}
