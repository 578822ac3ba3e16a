import ArgumentParser
import FoundationEssentials
import ReplaySystem
import ReplayIPC

extension Replay {
    /// `replay clip`: keep the last minutes in memory, save them when something happened.
    struct Clip: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Keep the last minutes of the screen in memory; save them as a clip when something worth keeping happened.",
            discussion: """
                `replay clip start` keeps the last --length seconds (encoded, in replayd's memory: \
                nothing is written until a save). `replay clip save` writes the last seconds into \
                the store as a recording, while buffering goes on; `--to` also exports it to a file. \
                With --hotkey, a key saves it from anywhere on the desktop.
                """,
            subcommands: [Start.self, Save.self, Status.self, Stop.self])
    }
}

extension Replay.Clip {
    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start keeping the last seconds (or minutes) of the screen and its sound.",
            discussion: """
                Runs in replayd until `replay clip stop`; this command returns at once. What is \
                kept is bounded by --budget as well as by --length: when the budget is reached, the \
                oldest seconds go first. A keyframe is made at least once a second, so a clip starts \
                within a second of what is asked. Up to a minute is kept in memory; a longer buffer \
                (`--length 1800` keeps half an hour) is kept on disk, in a file with no name in the \
                store that goes when the buffer ends, and holds about a second in memory.
                """)

        @OptionGroup var daemon: DaemonOptions

        @Option(help: "Seconds kept, 1 to 3600. Up to 60 are kept in memory; a longer buffer is kept on disk (an unnamed file in the store), about a second of it in memory.")
        var length = 30.0

        @Option(help: "Bytes kept at most, in MB (1 to 4096; default 512, or 4096 for a buffer kept on disk).")
        var budget: Int?

        @Option(help: ArgumentHelp("Save the last --length seconds when this key is pressed anywhere on the desktop (X11: a grab of that key on the screen).", valueName: "Ctrl+Alt+S"))
        var hotkey: String?

        @OptionGroup(title: "What to record") var choices: CaptureChoices

        @Flag(help: "Print the clip buffer's status as one JSON object.")
        var json = false

        func validate() throws {
            if !(1...3600).contains(length) { throw ValidationError("--length must be between 1 and 3600 seconds") }
            if let budget, !(1...4096).contains(budget) { throw ValidationError("--budget must be between 1 and 4096 MB") }
        }

        func run() throws {
            try reportingFailure {
                let channel = try DaemonClient.connect(socket: daemon.socket)
                let options = try choices.recordingOptions(duration: nil)
                try channel.send(ClientRequest.startClipBuffering(options: options, length: length, byteBudget: budget.map { $0 << 20 }, hotkey: hotkey))
                let reply = try DaemonClient.nextAfterChoices(channel, area: options.area, keeping: true)
                guard case .clipBufferingStarted(let status) = reply else {
                    throw DaemonClient.Failure(description: "unexpected reply from replayd")
                }
                if json {
                    print(try Status.encode(status))
                } else {
                    let key = hotkey.map { ", or press \($0)" } ?? ""
                    print("Keeping the last \(Int(status.length)) s of \(status.width)x\(status.height) (up to \(status.byteBudget >> 20) MB\(status.onDisk == true ? " on disk" : "")): "
                        + "`replay clip save` saves them\(key); `replay clip stop` ends it.")
                }
            }
        }
    }

    struct Save: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Save the last seconds as a recording in the store (and optionally a file); buffering goes on.")

        @OptionGroup var daemon: DaemonOptions

        @Option(help: "Seconds to save (default: everything kept).")
        var last: Double?

        @Option(help: "Also export the clip to this file (Matroska when it ends in .mkv); - writes it to standard output.")
        var to: String?

        @Flag(help: "Replace the --to file if it is an existing regular file (never a folder).")
        var force = false

        @Flag(help: "Print {id, duration, asked, frames, bytes} as one JSON object.")
        var json = false

        func validate() throws {
            if let last, !(last > 0 && last <= 3600) { throw ValidationError("--last must be more than 0 and up to 3600 seconds") }
            if let to {
                let destination = MovieDestination(to)
                if destination == .standardOutput && json { throw ValidationError("--json and --to - both write to standard output: choose one") }
                _ = try destination.container(choice: nil, option: "--to")
                try destination.check(force: force, option: "--to", bytesNeeded: 0)
            }
        }

        func run() throws {
            try reportingFailure {
                let channel = try DaemonClient.connect(socket: daemon.socket)
                try channel.send(ClientRequest.saveClip(last: last))
                guard case .clipSaved(let clip) = try DaemonClient.next(channel).message else {
                    throw DaemonClient.Failure(description: "unexpected reply from replayd")
                }
                if let to {
                    let destination = MovieDestination(to)
                    try Exporter(channel: channel, quiet: json).export(
                        id: clip.id, to: destination, container: try destination.container(choice: nil, option: "--to"), force: force)
                }
                if json {
                    print(try Status.encode(clip))
                    return
                }
                if clip.isShort, let asked = clip.asked {
                    printError("warning: only \(String(printf: "%.1f", clip.duration)) s were kept so far, not the \(String(printf: "%g", asked)) s asked")
                }
                let line = "Saved \(clip.id): \(String(printf: "%.1f", clip.duration)) s, \(clip.frames) frames."
                // Standard output may be carrying the movie.
                if to.map(MovieDestination.init) == .standardOutput { printError(line) } else { print(line) }
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show whether clip buffering is on, and how much it keeps.")

        @OptionGroup var daemon: DaemonOptions

        @Flag(help: "Print the status as one JSON object (null when off).")
        var json = false

        func run() throws {
            try reportingFailure {
                let status = try DaemonClient.ask(.clipStatus, socket: daemon.socket) { event -> ClipStatus?? in
                    if case .clipStatus(let status) = event { status } else { nil }
                }
                if json {
                    print(try status.map(Self.encode) ?? "null")
                } else if let status {
                    print("clip buffering\(status.paused ? " (paused)" : ""): \(String(printf: "%.1f", status.buffered)) of "
                        + "\(Int(status.length)) s kept, \(status.bytes >> 20) of \(status.byteBudget >> 20) MB\(status.onDisk == true ? " on disk" : ""), "
                        + "\(status.width)x\(status.height) (\(status.id))")
                    for save in status.saves ?? [] { print(Self.describe(save)) }
                } else {
                    print("clip buffering is off")
                }
            }
        }

        /// "  saved ID: 30.0 s at 12:00:05, by the hotkey".
        static func describe(_ save: ClipSaveRecord) -> String {
            let time = LocalTime.string(save.saved, format: "%H:%M:%S")
            let how = switch save.trigger {
            case .hotkey: "by the hotkey"
            case .command: "by a save command"
            }
            return "  saved \(save.id): \(String(printf: "%.1f", save.duration)) s at \(time), \(how)"
        }

        static func encode(_ value: some Encodable) throws -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return String(decoding: try encoder.encode(value), as: UTF8.self)
        }
    }

    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop clip buffering; what was kept and not saved is gone.")

        @OptionGroup var daemon: DaemonOptions

        func run() throws {
            try reportingFailure {
                _ = try DaemonClient.ask(.stopClipBuffering, socket: daemon.socket) { event -> Bool? in
                    if case .clipBufferingStopped = event { true } else { nil }
                }
                print("Clip buffering stopped.")
            }
        }
    }
}
