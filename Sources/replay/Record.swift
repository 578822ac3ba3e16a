public import ArgumentParser  // public: the codec and quality enums conform to ExpressibleByArgument here
import Foundation
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

        @Option(help: "Stop once this many seconds are recorded; time paused does not count (default: until Ctrl-C).")
        var duration: Double?

        @Flag(help: "Also record the microphone (the default source) as a second audio track.")
        var mic = false

        @Flag(inversion: .prefixedNo, help: "Record what plays on the default output.")
        var appAudio = true

        @Option(help: "Which sound: none, system (what plays: app audio), mic, or both (two tracks). Overrides --mic and --no-app-audio.")
        var audio: AudioChoice?

        @Option(help: "Record app audio from this output (an audio server sink name, as `pactl list short sinks` shows) instead of the default.")
        var audioDevice: String?

        @Option(help: "Record the microphone from this input (a source name, as `pactl list short sources` shows) instead of the default.")
        var micDevice: String?

        @Option(help: "Record only this application's sound (its name or program, as `pactl list sink-inputs` shows; it must be playing when the recording starts).")
        var audioApp: String?

        @Flag(inversion: .prefixedNo, help: "Draw the pointer into the recording.")
        var cursor = true

        @Option(help: "Frames per second at most; a still screen records fewer.")
        var fps = 30

        @Option(help: "Video codec: h264 (x264, the default: least CPU, plays everywhere), hevc (x265) or av1 (SVT-AV1): smaller files for more CPU.")
        var codec: VideoCodec = .h264

        @Option(help: "Constant quality: low, medium, high or lossless (not with av1); the same look for every codec (default: medium).")
        var quality: VideoQuality?

        @Option(help: "Speed preset, from ultrafast (least CPU) to veryslow: x264's names, mapped onto x265's and SVT-AV1's.")
        var preset = "ultrafast"

        @Option(help: "Video bit rate in kb/s instead of a constant quality.")
        var bitrate: Int?

        @Option(help: "Frames between keyframes (default: one second's worth).")
        var keyframeInterval: Int?

        @Flag(help: "No desktop notification for this recording (for scripts); apps' recordings are always announced.")
        var noNotify = false

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
            if quality != nil && bitrate != nil { throw ValidationError("give --quality or --bitrate, not both") }
            if audio == AudioChoice.none || audio == .mic, audioApp != nil || audioDevice != nil {
                throw ValidationError("--audio-app and --audio-device choose app audio, which --audio \(audio!.rawValue) leaves out")
            }
            if quality == .lossless && codec == .av1 {
                throw ValidationError("SVT-AV1 has no lossless mode: use --codec h264 or hevc with --quality lossless")
            }
            // Refused now rather than after the recording.
            if let output, FileManager.default.fileExists(atPath: output), !force {
                throw ValidationError("\(output) exists; pass --force to replace it")
            }
        }

        func run() throws {
            let options = RecordingOptions(
                duration: duration, fps: fps, microphone: audio.map { $0 == .mic || $0 == .both } ?? mic,
                appAudio: audio.map { $0 == .system || $0 == .both } ?? appAudio, showCursor: cursor,
                video: VideoEncoding(preset: preset, bitRate: bitrate.map { $0 * 1000 }, keyframeInterval: keyframeInterval,
                                     codec: codec == .h264 ? nil : codec, quality: quality),
                notify: noNotify ? false : nil, audioDevice: audioDevice, microphoneDevice: micDevice, audioApplication: audioApp)

            // Inside a virtual desktop of our own (see runInVirtualDesktop): its daemon is ours
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
                try runInVirtualDesktop()
            }
            let socket = daemon.socket ?? (privateDesktop ? environment[ReplayPaths.socketVariable] : nil)

            let channel: MessageChannel
            do {
                channel = try DaemonClient.connect(socket: socket, display: privateDesktop ? environment["DISPLAY"] : nil)
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
            if privateDesktop, let socket { stopPrivateDaemon(channel, socket: socket) }
            if !result.succeeded || !exported { throw ExitCode.failure }
        }

        /// No desktop here: bring our own. This same command runs again under
        /// `replay-demo-scene --desktop`, which starts Xvfb, PulseAudio and the demo scene,
        /// runs it there with their DISPLAY, PULSE_SERVER and a daemon socket of the desktop's
        /// own, passes on its output, Ctrl-C and exit status, and stops them all afterwards.
        /// The desktop lives in that process, so replay itself links none of it.
        private func runInVirtualDesktop() throws -> Never {
            let launcher = ReplayPaths.siblingExecutable("replay-demo-scene").path
            let arguments = [launcher, "--desktop", "--", ReplayPaths.runningExecutable().path] + CommandLine.arguments.dropFirst()
            let argv = arguments.map { strdup($0) } + [nil]
            execv(launcher, argv)
            let reason = String(cString: strerror(errno))
            printError("error: cannot start the virtual desktop: cannot run \(launcher): \(reason)")
            throw ExitCode.failure
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

extension VideoCodec: ExpressibleByArgument {}
extension VideoQuality: ExpressibleByArgument {}

/// `--audio`: which sound a recording keeps.
enum AudioChoice: String, CaseIterable, ExpressibleByArgument {
    case none
    case system
    case mic
    case both
}
