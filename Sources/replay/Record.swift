import ArgumentParser
import Foundation
import ReplayIPC
import ReplayVirtualDesktop
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
                (app audio); --mic adds the default input as a second audio track.
                """)

        @OptionGroup var daemon: DaemonOptions

        @Option(help: "Stop after this many seconds (default: until Ctrl-C).")
        var duration: Double?

        @Flag(help: "Also record the microphone (the default source) as a second audio track.")
        var mic = false

        @Flag(inversion: .prefixedNo, help: "Record what plays on the default output.")
        var appAudio = true

        @Flag(inversion: .prefixedNo, help: "Draw the pointer into the recording.")
        var cursor = true

        @Option(help: "Frames per second at most; a still screen records fewer.")
        var fps = 30

        @Option(help: "x264 preset, from ultrafast (least CPU) to veryslow.")
        var preset = "ultrafast"

        @Option(help: "Video bit rate in kb/s (default: constant quality).")
        var bitrate: Int?

        @Option(help: "Frames between keyframes (default: one second's worth).")
        var keyframeInterval: Int?

        @Option(name: .shortAndLong, help: "Also export the finished recording to this file.")
        var output: String?

        @Flag(help: "Replace the --output file if it exists.")
        var force = false

        @Flag(help: "Print the result as one JSON object with keys id, duration, frames, dropped.")
        var json = false

        func validate() throws {
            if let duration, !(duration > 0) { throw ValidationError("--duration must be a positive number of seconds") }
            if !(1...120).contains(fps) { throw ValidationError("--fps must be between 1 and 120") }
            if let bitrate, !(100...100_000).contains(bitrate) { throw ValidationError("--bitrate must be between 100 and 100000 kb/s") }
            if let keyframeInterval, keyframeInterval < 1 { throw ValidationError("--keyframe-interval must be at least 1") }
            // Refused now rather than after the recording.
            if let output, FileManager.default.fileExists(atPath: output), !force {
                throw ValidationError("\(output) exists; pass --force to replace it")
            }
        }

        func run() throws {
            let options = RecordingOptions(
                duration: duration, fps: fps, microphone: mic, appAudio: appAudio, showCursor: cursor,
                video: VideoEncoding(preset: preset, bitRate: bitrate.map { $0 * 1000 }, keyframeInterval: keyframeInterval))

            // No desktop here: bring our own, with a daemon of its own, and stop both afterwards.
            var desktop: VirtualDesktop?
            var socket = daemon.socket
            var environment: [String: String] = [:]
            if (ProcessInfo.processInfo.environment["DISPLAY"] ?? "").isEmpty {
                if !json { printError("No DISPLAY: starting a virtual 1920x1080 display, an audio server and the demo scene.") }
                do {
                    desktop = try VirtualDesktop.start()
                } catch {
                    printError("error: cannot start the virtual desktop: \(error)")
                    throw ExitCode.failure
                }
                environment = desktop!.environment
                socket = socket ?? desktop!.directory.appendingPathComponent("replayd.sock").path
            }
            defer { desktop?.stop() }

            let channel: MessageChannel
            do {
                channel = try DaemonClient.connect(socket: socket, environment: environment, display: environment["DISPLAY"])
            } catch {
                printError("error: \(error)")
                throw ExitCode.failure
            }
            let result = try RecordingRun(channel: channel, options: options, json: json).perform()
            var exported = true
            if let output, let id = result.id {
                do {
                    try Exporter(channel: channel, quiet: json).export(id: id, to: output)
                } catch {
                    printError("error: export failed: \(error)")
                    exported = false
                }
            }
            if desktop != nil, let socket { stopPrivateDaemon(channel, socket: socket) }
            if !result.succeeded || !exported { throw ExitCode.failure }
        }

        /// The daemon of a virtual desktop is ours alone: stop it with the desktop.
        private func stopPrivateDaemon(_ channel: MessageChannel, socket: String) {
            try? channel.send(ClientRequest.status)
            guard let event = try? channel.receive(DaemonEvent.self), case .status(let status) = event.message else { return }
            kill(status.pid, SIGTERM)
            // It removes its socket once its recordings are closed.
            let deadline = Date().addingTimeInterval(10)
            while FileManager.default.fileExists(atPath: socket) && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        }
    }
}
