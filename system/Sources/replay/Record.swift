import ArgumentParser
import FoundationEssentials
import ReplayIPC
import ReplayMedia
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

extension Replay {
    struct Record: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Record the screen and its audio into the private store.",
            discussion: """
                Records until --duration has passed or until Ctrl-C, which stops cleanly and \
                keeps the recording. Prints the recording's id, duration, frame count and \
                dropped frames when done. Audio that plays on the default output is recorded \
                (app audio); --mic adds the default input as a second audio track. From another \
                terminal, `replay pause` and `replay resume` leave a stretch out of the movie.
                """)

        @OptionGroup var daemon: DaemonOptions

        // Unconditional: `--duration -1` is a value to refuse with a reason, not a missing one.
        @Option(parsing: .unconditional, help: "Stop once this many seconds are recorded; time paused does not count (default: until Ctrl-C).")
        var duration: Double?

        @OptionGroup(title: "What to record") var choices: CaptureChoices

        @Option(name: .shortAndLong, help: ArgumentHelp("Also export the finished recording to this file (Matroska when it ends in .mkv), or with - to standard output (fragmented MP4 or Matroska: neither needs seeking). Its folder and free space are checked before recording starts.", valueName: "file|-"))
        var output: String?

        @Option(help: "The --output file's container: mp4 or mkv (Matroska, the same streams copied); the store keeps MP4. Default: as the file's extension says, with which it must agree.")
        var container: ContainerChoice?

        @Flag(help: "Replace the --output file if it is an existing regular file (never a folder); the new movie replaces it only once complete.")
        var force = false

        @Flag(help: "Print the result as one JSON object with keys id, duration, frames, dropped.")
        var json = false

        func validate() throws {
            if let duration, !(duration > 0) { throw ValidationError("--duration must be a positive number of seconds, such as --duration 10") }
            if container != nil && output == nil {
                throw ValidationError("--container is the --output file's: the store keeps MP4 (`replay recordings export --container` later)")
            }
            // Refused now rather than after the recording.
            if let output {
                let destination = MovieDestination(output)
                if destination == .standardOutput && json { throw ValidationError("--json and --output - both write to standard output: choose one") }
                _ = try destination.container(choice: container, option: "--output")
                let video = try choices.recordingOptions(duration: duration).video
                try destination.check(force: force, option: "--output", bytesNeeded: video.estimatedBytes(seconds: 60))
            }
        }

        func run() throws {
            let options = try choices.recordingOptions(duration: duration)

            // Inside a virtual desktop of our own (`VirtualDesktopRun`): its daemon is ours
            // alone, on the desktop's socket; stop it afterwards, before the desktop stops.
            let environment = ProcessInfo.processInfo.environment
            let privateDesktop = !(environment[ReplayPaths.virtualDesktopVariable] ?? "").isEmpty
            // No desktop at all (neither X11 nor Wayland): a virtual one of our own.
            if (environment["DISPLAY"] ?? "").isEmpty && (environment["WAYLAND_DISPLAY"] ?? "").isEmpty {
                if privateDesktop {
                    printError("error: the virtual desktop gave no DISPLAY")
                    throw ExitCode.failure
                }
                if !json { printError("No DISPLAY or WAYLAND_DISPLAY: starting a virtual 1920x1080 display, an audio server and the demo scene.") }
                try VirtualDesktopRun.execInOwnDesktop()
            }
            let socket = daemon.socket ?? (privateDesktop ? environment[ReplayPaths.socketVariable] : nil)

            let channel: MessageChannel
            do {
                channel = try DaemonClient.connect(socket: socket, display: privateDesktop ? environment["DISPLAY"] : nil)
            } catch {
                printError("error: \(error)")
                throw ExitCode.failure
            }
            let destination = output.map(MovieDestination.init)
            var run = RecordingRun(channel: channel, options: options, json: json)
            run.summaryToStandardError = destination == .standardOutput
            let result = try run.perform()
            var exported = true
            if let destination, let id = result.id, !result.daemonStopped {
                do {
                    try Exporter(channel: channel, quiet: json).export(
                        id: id, to: destination, container: try destination.container(choice: container, option: "--output"), force: force)
                } catch {
                    printError("error: export failed: \(error). The take is kept in the store: replay recordings export \(id) --to FILE")
                    exported = false
                }
            }
            if privateDesktop, let socket { VirtualDesktopRun.stopPrivateDaemon(channel, socket: socket) }
            if !result.succeeded || !exported { throw ExitCode.failure }
        }
    }
}
