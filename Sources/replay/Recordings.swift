import ArgumentParser
import Foundation
import ReplayIPC
import ReplaySystem

extension Replay {
    struct Recordings: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List and export the recordings in the daemon's private store.",
            subcommands: [List.self, Export.self, Preview.self, Delete.self], defaultSubcommand: List.self)
    }
}

extension Replay.Recordings {
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List recordings, oldest first.")

        @OptionGroup var daemon: DaemonOptions

        @Flag(help: "Print a JSON array of recordings.")
        var json = false

        func run() throws {
            let recordings: [RecordingInfo]
            do {
                let channel = try DaemonClient.connect(socket: daemon.socket)
                try channel.send(ClientRequest.listRecordings)
                guard case .recordings(let list) = try DaemonClient.next(channel).message else {
                    throw DaemonClient.Failure(description: "unexpected reply from replayd")
                }
                recordings = list
            } catch {
                printError("error: \(error)")
                throw ExitCode.failure
            }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                print(String(decoding: try encoder.encode(recordings), as: UTF8.self))
                return
            }
            if recordings.isEmpty {
                print("No recordings yet. Make one with: replay record --duration 10")
                return
            }
            let dateFormatter = DateFormatter()
            dateFormatter.dateFormat = "yyyy-MM-dd HH:mm"
            for info in recordings {
                let date = dateFormatter.string(from: Date(timeIntervalSince1970: info.created))
                let size = String(format: "%.1f MB", Double(info.bytes) / 1_000_000)
                var line = "\(info.id)  \(date)  \(String(format: "%7.1f s", info.duration))  \(info.width)x\(info.height)  \(info.frames) frames  \(size)  \(info.state.rawValue)"
                if let error = info.error { line += " (\(error))" }
                print(line)
            }
        }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a recording out of the private store into a file of yours.")

        @OptionGroup var daemon: DaemonOptions

        @Argument(help: "The recording's id, as 'replay recordings list' shows it.")
        var id: String

        @Option(help: "The file to write: an MP4 movie, or Matroska when it ends in .mkv.")
        var to: String

        @Option(help: "mp4 or mkv (Matroska: the same streams, copied); default: as --to's extension says.")
        var container: ContainerChoice?

        @Flag(help: "Replace the file if it exists.")
        var force = false

        func validate() throws {
            if FileManager.default.fileExists(atPath: to) && !force {
                throw ValidationError("\(to) exists; pass --force to replace it")
            }
        }

        func run() throws {
            do {
                let channel = try DaemonClient.connect(socket: daemon.socket)
                try Exporter(channel: channel, quiet: false).export(id: id, to: to, container: container?.container)
            } catch {
                printError("error: \(error)")
                throw ExitCode.failure
            }
        }
    }
}

extension Replay.Recordings {
    struct Preview: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the address of a recording's preview page (watch, save or delete it in a browser).",
            discussion: """
                The address carries a one-time link that only you get: apps never see it. It opens \
                the page once, in the first browser that follows it, within 5 minutes; that browser \
                keeps the page for 30 minutes. Run this again for a fresh address. With --open, \
                the page opens in your browser and the address is never on a command line.
                """)

        @OptionGroup var daemon: DaemonOptions

        @Argument(help: "The recording's id, as 'replay recordings list' shows it.")
        var id: String

        @Flag(help: "Open the page with xdg-open (or $BROWSER) instead of printing its address.")
        var open = false

        func run() throws {
            try reportingFailure {
                let url = try DaemonClient.ask(.previewURL(id: id), socket: daemon.socket) {
                    if case .previewURL(let url) = $0 { url } else { nil }
                }
                if open { try PageOpener.open(url) } else { print(url) }
            }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a recording from the private store.")

        @OptionGroup var daemon: DaemonOptions

        @Argument(help: "The recording's id, as 'replay recordings list' shows it.")
        var id: String

        func run() throws {
            try reportingFailure {
                try DaemonClient.ask(.deleteRecording(id: id), socket: daemon.socket) {
                    if case .recordingDeleted = $0 { () } else { nil }
                }
                printError("Deleted \(id).")
            }
        }
    }
}

/// Streams a recording from the daemon into a file: written beside the target and renamed
/// into place only when complete, so a failed export never leaves half a movie under its name.
struct Exporter {
    let channel: MessageChannel
    let quiet: Bool

    /// Writes recording `id` to `path`, in `container` (nil: as the file's extension says).
    func export(id: String, to path: String, container: MovieContainer? = nil) throws {
        let container = container ?? MovieContainer(fileExtensionOf: path)
        try channel.send(ClientRequest.exportRecording(id: id, container: container == .mp4 ? nil : container))
        guard case .exportBegin(let size) = try DaemonClient.next(channel).message else {
            throw DaemonClient.Failure(description: "unexpected reply from replayd")
        }
        let target = URL(fileURLWithPath: path)
        let partial = target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).partial")
        guard FileManager.default.createFile(atPath: partial.path, contents: nil),
              let handle = FileHandle(forWritingAtPath: partial.path) else {
            throw DaemonClient.Failure(description: "cannot write \(partial.path)")
        }
        var written: Int64 = 0
        do {
            defer { try? handle.close() }
            while true {
                let event = try DaemonClient.next(channel)
                switch event.message {
                case .exportChunk:
                    try handle.write(contentsOf: event.body)
                    written += Int64(event.body.count)
                case .exportEnd:
                    // A finished recording does not change; one still being written may grow.
                    guard written >= size else {
                        throw DaemonClient.Failure(description: "export ended after \(written) of \(size) bytes")
                    }
                    try handle.synchronize()
                    _ = try? FileManager.default.removeItem(at: target)
                    try FileManager.default.moveItem(at: partial, to: target)
                    if !quiet { printError("Exported \(id) to \(path) (\(String(format: "%.1f", Double(written) / 1_000_000)) MB).") }
                    return
                default:
                    throw DaemonClient.Failure(description: "unexpected reply from replayd during export")
                }
            }
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
    }
}

/// `--container`, in the words people type.
enum ContainerChoice: String, CaseIterable, ExpressibleByArgument {
    case mp4
    case mkv

    var container: MovieContainer { self == .mkv ? .matroska : .mp4 }
}

extension MovieContainer {
    /// Matroska for a .mkv or .mka file name, MP4 for anything else.
    init(fileExtensionOf path: String) {
        self = ["mkv", "mka"].contains(URL(fileURLWithPath: path).pathExtension.lowercased()) ? .matroska : .mp4
    }
}
