public import ArgumentParser  // public: the codec and quality enums conform to ExpressibleByArgument here
import ReplayIPC
import ReplayMedia

/// What a recording (or a clip buffer) takes: sound, part of the screen, camera, encoding.
/// `replay record` and `replay clip start` share these options.
struct CaptureChoices: ParsableArguments {
    @Flag(help: "Also record the microphone (the default source) as a second audio track.")
    var mic = false

    @Flag(inversion: .prefixedNo, help: "Record what plays on the default output.")
    var appAudio = true

    @Option(help: "Which sound: none, system (what plays: app audio), mic, or both (two tracks). Overrides --mic and --no-app-audio.")
    var audio: AudioChoice?

    @Option(help: "Record app audio from this output (an audio server sink name, as `pactl list short sinks` shows) instead of the default.")
    var audioDevice: String?

    @Option(help: "Record the microphone from this input (a source name, as `pactl list short sources` shows) instead of the default; implies --mic.")
    var micDevice: String?

    @Option(help: "Record only this application's sound (its name or program, as `pactl list sink-inputs` shows; it must be playing when the recording starts).")
    var audioApp: String?

    @Flag(help: "Record even when a sound source named by --audio-device, --mic-device or --audio-app cannot be opened (a warning, and no such track); without it, that is an error before recording starts.")
    var audioBestEffort = false

    @Option(help: "Record only this monitor (a name `replay sources` lists); the movie has its size.")
    var monitor: String?

    @Option(help: ArgumentHelp("Record only this window (an id `replay sources` lists, like 0x1c00007), or `pick`: the next click chooses (on Wayland: the desktop's dialog, once; the choice is remembered). It is followed as it moves and resizes, fitted into the movie, which keeps its first size.", valueName: "id|pick"))
    var window: String?

    @Option(help: ArgumentHelp("Record only this rectangle of the screen: width x height + left + top in pixels, as in 800x600+100+50.", valueName: "WxH+X+Y"))
    var region: String?

    @Flag(help: "Draw the camera into a corner of the recording (the desktop's default camera, through PipeWire).")
    var camera = false

    @Option(help: "Which camera: a PipeWire node's name or serial, as `pw-cli ls Node` shows (implies --camera).")
    var cameraDevice: String?

    @Option(help: "Where the camera goes: top-left, top-right, bottom-left or bottom-right (default).")
    var cameraCorner: CameraPlace = .bottomRight

    @Option(help: "The camera's width in percent of the recording's, 5 to 50 (default: 25).")
    var cameraSize = 25

    @Flag(inversion: .prefixedNo, help: "Draw the pointer into the recording.")
    var cursor = true

    @Option(parsing: .unconditional, help: "Frames per second: at most, as the screen changes (vfr); exactly (cfr).")
    var fps = 30

    @Option(help: ArgumentHelp(
        "How frames are spaced in time. vfr (variable frame rate, the default): a frame when the screen changes, up to --fps a second, and a still picture again only every quarter second: smaller files, less CPU, and players show it right. cfr (constant frame rate): exactly --fps frames every second, the last picture repeated while the screen is still: use it for video editors (DaVinci Resolve, Premiere, Kdenlive…), which expect a fixed rate and may stutter or drift out of sync with a variable one.",
        valueName: "vfr|cfr"))
    var frameRateMode: FrameRateMode = .vfr

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


    func validate() throws {
    if !(1...120).contains(fps) { throw ValidationError("--fps must be between 1 and 120") }
    if let bitrate, !(100...100_000).contains(bitrate) { throw ValidationError("--bitrate must be between 100 and 100000 kb/s") }
    if let keyframeInterval, keyframeInterval < 1 { throw ValidationError("--keyframe-interval must be at least 1") }
    if quality != nil && bitrate != nil { throw ValidationError("give --quality or --bitrate, not both") }
    if audio == AudioChoice.none || audio == .mic, audioApp != nil || audioDevice != nil {
        throw ValidationError("--audio-app and --audio-device choose app audio, which --audio \(audio!.rawValue) leaves out")
    }
    if audio == AudioChoice.none || audio == .system, micDevice != nil {
        throw ValidationError("--mic-device chooses the microphone, which --audio \(audio!.rawValue) leaves out")
    }
    if [monitor, window, region].compactMap({ $0 }).count > 1 {
        throw ValidationError("give one of --monitor, --window and --region")
    }
    _ = try area()
    if !(5...50).contains(cameraSize) { throw ValidationError("--camera-size must be between 5 and 50 (percent)") }
    if quality == .lossless && codec == .av1 {
        throw ValidationError("SVT-AV1 has no lossless mode: use --codec h264 or hevc with --quality lossless")
    }
    }

    /// The request's options; `duration` nil records until stopped.
    func recordingOptions(duration: Double?) throws -> RecordingOptions {
    RecordingOptions(
        duration: duration, fps: fps, microphone: audio.map { $0 == .mic || $0 == .both } ?? (mic || micDevice != nil),
        appAudio: audio.map { $0 == .system || $0 == .both } ?? appAudio, showCursor: cursor,
        video: VideoEncoding(preset: preset, bitRate: bitrate.map { $0 * 1000 }, keyframeInterval: keyframeInterval,
                             codec: codec == .h264 ? nil : codec, quality: quality),
        notify: noNotify ? false : nil, audioDevice: audioDevice, microphoneDevice: micDevice, audioApplication: audioApp,
        area: try area(),
        camera: camera || cameraDevice != nil
            ? CameraOverlay(device: cameraDevice, corner: cameraCorner.overlayCorner, size: cameraSize) : nil,
        requireNamedAudio: audioBestEffort ? nil : true,
        frameRateMode: frameRateMode == .vfr ? nil : frameRateMode)
    }

    /// What part of the screen --monitor, --window or --region names; nil for all of it.
    func area() throws -> CaptureArea? {
        if let monitor { return .monitor(name: monitor) }
        if let window {
            if window == "pick" { return .pickWindow(seconds: 60) }
            guard let id = CaptureArea.windowID(window) else {
                throw ValidationError("--window takes a window id (0x1c00007 or 29360135, as `replay sources` lists) or `pick`")
            }
            return .window(id: id)
        }
        if let region {
            guard let area = CaptureArea.region(region) else {
                throw ValidationError("--region takes WxH+X+Y, as in 800x600+100+50")
            }
            return area
        }
        return nil
    }
}

extension VideoCodec: ExpressibleByArgument {}
extension VideoQuality: ExpressibleByArgument {}
extension FrameRateMode: ExpressibleByArgument {}

/// `--audio`: which sound a recording keeps.
enum AudioChoice: String, CaseIterable, ExpressibleByArgument {
    case none
    case system
    case mic
    case both
}

/// `--camera-corner`, in the words people type.
enum CameraPlace: String, CaseIterable, ExpressibleByArgument {
    case topLeft = "top-left", topRight = "top-right", bottomLeft = "bottom-left", bottomRight = "bottom-right"

    var overlayCorner: CameraOverlay.Corner {
        switch self {
        case .topLeft: .topLeft
        case .topRight: .topRight
        case .bottomLeft: .bottomLeft
        case .bottomRight: .bottomRight
        }
    }
}
