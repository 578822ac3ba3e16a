import ArgumentParser
import FoundationEssentials
import ReplayIPC
import ReplayMedia
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

extension Replay {
    struct Recordings: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List and export the recordings in the daemon's private store.",
            subcommands: [List.self, Export.self, Preview.self, Delete.self], defaultSubcommand: List.self)
    }
}

extension Replay.Recordings {
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List recordings, oldest first.",
            discussion: """
                Each line: id, when it was made, length, size in pixels, frames, codec/container \
                (the store keeps fragmented MP4, which an export writes unless --container mkv or \
                a .mkv name asks for Matroska), size on disk and state: recording, complete, or \
                interrupted (ended by a fault; it plays up to its last second).
                """)

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
            for info in recordings {
                let date = LocalTime.string(info.created, format: "%Y-%m-%d %H:%M")
                let size = String(printf: "%8.1f MB", Double(info.bytes) / 1_000_000)
                // The store keeps fragmented MP4: what an export writes unless asked for Matroska.
                let format = "\(info.codec?.rawValue ?? "?")/mp4"
                var line = "\(info.id)  \(date)  \(String(printf: "%7.1f s", info.duration))  \(info.width)x\(info.height)  "
                    + "\(info.frames) frames  \(format)  \(size)  \(info.state.rawValue)"
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

        @Option(help: "The file to write: an MP4 movie, or Matroska when it ends in .mkv; - writes the movie to standard output.")
        var to: String

        @Option(help: "mp4 or mkv (Matroska: the same streams, copied); default: as --to's extension says. Must agree with that extension.")
        var container: ContainerChoice?

        @Option(name: .customLong("from"), help: ArgumentHelp(
            "Start the movie this many seconds into the recording (e.g. 3 or 2.5); default: its start.",
            discussion: "What was on screen at that moment opens the movie. The video is copied from the first keyframe on (one a second by default) and only the pictures before it are encoded again, so a trim takes about as long as a copy.",
            valueName: "seconds"))
        var from: Double?

        @Option(name: .customLong("until"), help: ArgumentHelp(
            "End the movie this many seconds into the recording (not a length: --from 3 --until 7 keeps 4 s); default: its end.",
            valueName: "seconds"))
        var until: Double?

        @Flag(help: "Replace the file if it is an existing regular file (never a folder).")
        var force = false

        func validate() throws {
            if let from, !(from.isFinite && from >= 0) { throw ValidationError("--from must be a number of seconds, 0 or more") }
            if let until, !(until.isFinite && until > 0) { throw ValidationError("--until must be a number of seconds, more than 0") }
            if let from, let until, from >= until {
                throw ValidationError("--until (\(until)) must be later than --from (\(from)): it is a time in the recording, not a length")
            }
            let destination = MovieDestination(to)
            _ = try destination.container(choice: container, option: "--to")
            try destination.check(force: force, option: "--to", bytesNeeded: 0)
        }

        func run() throws {
            do {
                let channel = try DaemonClient.connect(socket: daemon.socket)
                let destination = MovieDestination(to)
                try Exporter(channel: channel, quiet: false).export(
                    id: id, to: destination, container: try destination.container(choice: container, option: "--to"), force: force,
                    from: from, until: until)
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
        static let configuration = CommandConfiguration(
            abstract: "Delete recordings from the private store.",
            discussion: "Each id is deleted on its own: one that cannot be (unknown, still recording) is reported and the rest are still deleted; the exit status is non-zero if any failed.")

        @OptionGroup var daemon: DaemonOptions

        @Argument(help: "The recordings' ids, as 'replay recordings list' shows them.")
        var ids: [String]

        func validate() throws {
            if ids.isEmpty { throw ValidationError("name at least one recording id ('replay recordings list' shows them)") }
        }

        func run() throws {
            var failed = 0
            try reportingFailure {
                let channel = try DaemonClient.connect(socket: daemon.socket)
                for id in ids {
                    try channel.send(ClientRequest.deleteRecording(id: id))
                    do {
                        guard case .recordingDeleted = try DaemonClient.next(channel).message else {
                            throw DaemonClient.Failure(description: "unexpected reply from replayd")
                        }
                        printError("Deleted \(id).")
                    } catch let refusal as DaemonClient.Failure {
                        printError("error: \(id): \(refusal)")
                        failed += 1
                    }
                }
            }
            if failed > 0 { throw ExitCode.failure }
        }
    }
}

/// Streams a recording from the daemon to a `MovieDestination`. A file is written beside its
/// target and renamed into place only when complete, so a failed export never leaves half a
/// movie under its name, and the rename is all that replaces an old file.
struct Exporter {
    let channel: MessageChannel
    let quiet: Bool

    /// Where an export failed, with the reason and what the person can do.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Writes recording `id` (from `from` until `until` seconds into it, when given) to
    /// `destination` in `container`; `force` lets the rename replace a regular file.
    func export(id: String, to destination: MovieDestination, container: MovieContainer, force: Bool,
                from: Double? = nil, until: Double? = nil) throws {
        // A daemon without trimmed exports would ignore the span and send the whole movie.
        if from != nil || until != nil, channel.welcome?.capabilities.contains(.trimmedExport) != true {
            throw DaemonClient.Failure(description: "this replayd cannot export part of a recording (--from, --until); update it or export the whole")
        }
        try channel.send(ClientRequest.exportRecording(id: id, container: container == .mp4 ? nil : container, from: from, to: until))
        guard case .exportBegin(let size) = try DaemonClient.next(channel).message else {
            throw DaemonClient.Failure(description: "unexpected reply from replayd")
        }
        // The whole movie must fit beside its target before a byte is written.
        try destination.checkRoom(bytesNeeded: size)
        let output = try MovieOutput(destination)
        var written: Int64 = 0
        do {
            while true {
                let event = try DaemonClient.next(channel)
                switch event.message {
                case .exportChunk:
                    try output.write(event.body)
                    written += Int64(event.body.count)
                case .exportEnd:
                    // A finished recording does not change; one still being written may grow.
                    guard written >= size else {
                        throw DaemonClient.Failure(description: "export ended after \(written) of \(size) bytes")
                    }
                    try output.finish(force: force)
                    if !quiet {
                        let megabytes = String(printf: "%.1f", Double(written) / 1_000_000)
                        switch destination {
                        case .file(let path): printError("Exported \(id) to \(path) (\(megabytes) MB).")
                        case .standardOutput: printError("Wrote \(id) to standard output (\(megabytes) MB).")
                        }
                    }
                    return
                default:
                    throw DaemonClient.Failure(description: "unexpected reply from replayd during export")
                }
            }
        } catch {
            output.abandon()
            throw error
        }
    }
}

/// The bytes of one export on their way out: a partial file beside the target, or standard output.
private final class MovieOutput {
    private let destination: MovieDestination
    private let fd: Int32
    private let partial: String?
    private var isOpen = true

    init(_ destination: MovieDestination) throws {
        self.destination = destination
        switch destination {
        case .standardOutput:
            // A reader that goes away is an error to report, not a signal that kills us.
            signal(SIGPIPE, SIG_IGN)
            fd = STDOUT_FILENO
            partial = nil
        case .file(let path):
            let partialPath = MovieDestination.partialPath(for: path)
            let opened = open(partialPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard opened >= 0 else {
                throw Exporter.Failure(description: "cannot write \(partialPath): \(MovieDestination.reason(errno))")
            }
            fd = opened
            partial = partialPath
        }
    }

    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if count < 0 {
                if errno == EINTR { continue }
                let reason = MovieDestination.reason(errno)
                throw Exporter.Failure(description: partial.map { "cannot write \($0): \(reason)" } ?? "cannot write to standard output: \(reason)")
            }
            offset += count
        }
    }

    /// Makes the file whole on disk, then renames it over the target: rename(2) replaces a
    /// regular file in one step and refuses a folder.
    func finish(force: Bool) throws {
        guard case .file(let path) = destination, let partial else { return }
        guard fsync(fd) == 0 else { throw Exporter.Failure(description: "cannot write \(partial): \(MovieDestination.reason(errno))") }
        var status = stat()
        if lstat(path, &status) == 0 {
            // Checked before recording; checked again, as the place may have changed since.
            if status.st_mode & S_IFMT == S_IFDIR { throw Exporter.Failure(description: "\(path) is a folder, which is never replaced") }
            if status.st_mode & S_IFMT != S_IFREG { throw Exporter.Failure(description: "\(path) is not a regular file, which is never replaced") }
            if !force { throw Exporter.Failure(description: "\(path) appeared while recording; pass --force to replace it") }
        }
        guard rename(partial, path) == 0 else {
            throw Exporter.Failure(description: "cannot put the movie at \(path): \(MovieDestination.reason(errno))")
        }
        closeFile()
    }

    /// Removes the partial file of an export that failed.
    func abandon() {
        guard let partial else { return }
        closeFile()
        unlink(partial)
    }

    private func closeFile() {
        if isOpen, partial != nil { close(fd) }
        isOpen = false
    }
}

/// `--container`, in the words people type.
enum ContainerChoice: String, CaseIterable, ExpressibleByArgument {
    case mp4
    case mkv

    var container: MovieContainer { self == .mkv ? .matroska : .mp4 }
}

