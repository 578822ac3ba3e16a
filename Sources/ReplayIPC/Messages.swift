// VideoCodec and VideoQuality; the client-decoder fuzzer compiles their file into its one module instead.
#if canImport(ReplayMedia)
public import ReplayMedia
#endif

/// What a client asks of replayd. Every associated value is labelled: the label is the JSON
/// field name (`{"startBroadcast":{"request":{…}}}`), docs/protocol.md lists every shape and
/// `MessageGoldenTests` pins them.
public enum ClientRequest: Codable, Sendable, Equatable {
    /// The first message on every connection, and only the first: answered with `welcome`, or
    /// with an error (`protocolVersionMismatch`) and the connection closed. `client` names the
    /// program for replayd's log ("replay", "OpenReplayKit"); it grants nothing.
    /// `protocolVersion` is the major version, which must match the daemon's; `minorVersion`
    /// (nil, absent, from clients of 2.0: 0) and `capabilities` (named features the client
    /// understands, `ClientProtocol.Capability`) came with 2.1 (docs/protocol.md, "Growth").
    case hello(protocolVersion: Int, client: String, minorVersion: Int? = nil, capabilities: [String]? = nil)

    /// Starts a recording on this connection; the daemon answers with `recordingStarted`,
    /// then `progress` about once a second, then `recordingFinished`.
    case startRecording(options: RecordingOptions)
    /// Stops the recording this connection started, keeping it.
    case stopRecording
    /// Leaves what is captured from now out of a recording until `resumeRecording`: the movie
    /// has no gap and no frozen span there. The person's tools may name any running
    /// recording (nil: the only one); an app only the one its connection started. Answered
    /// with `recordingPaused`.
    case pauseRecording(id: String?)
    /// Answered with `recordingResumed`.
    case resumeRecording(id: String?)
    case listRecordings
    /// Streams a recording back as `exportBegin`, `exportChunk`s with the bytes as body,
    /// `exportEnd`: the stored MP4, or its streams copied into another `container`.
    /// `from` and `to` (seconds, since the capability `trimmedExport`) export only that span,
    /// cut without re-encoding where a keyframe allows; nil: the start, the end.
    case exportRecording(id: String, container: MovieContainer? = nil, from: Double? = nil, to: Double? = nil)
    case status

    // The person's own tools only (the replay CLI run by the store's owner).
    /// Deletes a recording from the store.
    case deleteRecording(id: String)
    /// A loopback URL, with a fresh token, of the recording's preview page.
    case previewURL(id: String)
    /// Makes this connection a consent agent: it receives `consentRequested` and
    /// `previewOffered` events and answers with `answerConsent`.
    case registerConsentAgent
    case answerConsent(requestID: String, allow: Bool)
    /// From a consent agent (2.3): a live picture of what the app asking `requestID` would
    /// receive, a few a second (`consentPreviewFrame`), until the question ends
    /// (`consentPreviewEnded`).
    case watchConsentPreview(requestID: String)

    // Apps.
    /// Deletes a recording this client process made and has not shown yet.
    case discardRecording(id: String)
    /// Asks the daemon to show the person the preview of a recording this process made.
    /// The app never sees the page or its token.
    case showPreview(id: String)
    /// Streams this process's own windows: `captureStarted`, then `capturedFrame`s.
    case startCapture(options: CaptureOptions)
    case stopCapture
    /// Subscribes to `captureState` events: one now, then one per change.
    case watchCaptureState
    /// Paints a window of this process black in every capture while this connection is open.
    case protectWindow(id: UInt32)
    case unprotectWindow(id: UInt32)

    // Broadcasts (the person's own tools; apps go through the picker).
    case listExtensions
    /// Answered with `broadcastStarted` once the extension is up, or an error.
    case startBroadcast(request: BroadcastRequest)
    /// nil: the most recent broadcast.
    case pauseBroadcast(id: String?)
    case resumeBroadcast(id: String?)
    case stopBroadcast(id: String?)
    case broadcastStatus
    /// An app asks the daemon to show the person the broadcast picker (narrowed to one
    /// extension if it names one). A broadcast the person starts there reports its status
    /// to this connection as `broadcastUpdated`; the app may pause, resume and stop it.
    /// `scope` `.app` broadcasts only this process's windows; nil (absent on the wire) is `.screen`.
    /// `setup` (since 2.2, capability `pickerSetup`) fills in the preferred extension's fields
    /// that are not secret (a call's server and room, say); the person still sees and may change them.
    case showBroadcastPicker(preferredExtension: String?, microphone: Bool, scope: BroadcastScope? = nil,
                             setup: [String: String]? = nil)
    /// A consent agent (the desktop's picker, the person's tool) starts the broadcast the person
    /// chose in the picker it was offered (`PickerOffer.pickerID`), for the app that opened it:
    /// one per picker. Answered with `broadcastStarted` (since 2.4, capability `nativePicker`).
    case startPickedBroadcast(pickerID: String, extensionID: String, setup: [String: String], microphone: Bool)
    /// A consent agent stops the broadcast its picker started, and no other. Answered with
    /// `broadcastUpdated` once it has ended.
    case stopPickedBroadcast(pickerID: String)

    // Capture sources (the person's own tools).
    /// Forgets the screen the desktop's portal dialog chose (its restore token): the next
    /// capture asks the person again. Answered with `screenChoiceForgotten`.
    case forgetScreenChoice
    /// The monitors, windows and audio devices that can be recorded now: answered with `sources`.
    case listSources

    // Clip buffering: keep the last minutes, save them when asked.
    /// Starts keeping the last `length` seconds (1 … 3600) of what `options` records, in at most
    /// `byteBudget` bytes (nil: 512 MiB in memory; 4 GiB on disk for a buffer longer than 60 s,
    /// which spills to an unnamed file in the store). The person's buffer runs in the daemon
    /// until `stopClipBuffering` (one at a time); an app's holds only its own windows and ends
    /// with its connection. The person's may name a `hotkey` ("Ctrl+Alt+S"): replayd grabs
    /// that key on the whole X screen and saves the last `length` seconds when it is pressed.
    /// Answered with `clipBufferingStarted`.
    case startClipBuffering(options: RecordingOptions, length: Double, byteBudget: Int? = nil, hotkey: String? = nil)
    /// Saves the last `last` seconds (nil: everything buffered), starting on a keyframe, while
    /// buffering goes on. The person's tools get a new recording in the store (`clipSaved`);
    /// an app gets `clipSaved` and then the movie's bytes as an export (`exportBegin`…), its
    /// own windows only, and nothing is kept.
    case saveClip(last: Double?)
    /// Answered with `clipStatus`.
    case clipStatus
    /// Answered with `clipBufferingStopped`.
    case stopClipBuffering
}

/// The container of an exported movie; the store keeps fragmented MP4.
public enum MovieContainer: String, Codable, Sendable, CaseIterable {
    case mp4
    /// Matroska (.mkv): the same streams, copied.
    case matroska
}

public struct RecordingOptions: Codable, Sendable, Equatable {
    /// Stop by itself after this long; nil records until `stopRecording`.
    public var duration: Double?
    public var fps: Int
    public var microphone: Bool
    public var appAudio: Bool
    public var showCursor: Bool
    public var video: VideoEncoding
    /// false: no desktop notification for this recording; honoured for the person's own tools
    /// only (an app's recording is always announced). nil (absent) is true.
    public var notify: Bool?
    /// App audio from this output (an audio server's sink, recorded through its monitor);
    /// nil: the default output.
    public var audioDevice: String?
    /// The microphone from this input (a source); nil: the default input.
    public var microphoneDevice: String?
    /// App audio of this application only (its name, or its program's), wherever it plays.
    public var audioApplication: String?
    /// A monitor, a window or a region instead of the whole screen (nil). An app may name a
    /// monitor or a region, or a window of its own (another's records black); picking a window
    /// is for the person's tools only.
    public var area: CaptureArea?
    /// The camera drawn into a corner of the recording; nil: none.
    public var camera: CameraOverlay?
    /// Windows painted black in this recording only (X ids, up to 256).
    public var excludedWindows: [UInt32]?
    /// true: a sound source named by `audioDevice`, `microphoneDevice` or `audioApplication`
    /// that cannot be opened refuses the recording (`captureFailed`) instead of recording
    /// without it. nil (absent, as older clients send) is false: a warning.
    public var requireNamedAudio: Bool?
    /// `cfr`: exactly `fps` pictures a second, the last one repeated while the screen is
    /// still, for video editors; nil (absent, as from older clients) is `vfr`.
    public var frameRateMode: FrameRateMode?

    public init(duration: Double? = nil, fps: Int = 30, microphone: Bool = false, appAudio: Bool = true,
                showCursor: Bool = true, video: VideoEncoding = .default, notify: Bool? = nil,
                audioDevice: String? = nil, microphoneDevice: String? = nil, audioApplication: String? = nil,
                area: CaptureArea? = nil, camera: CameraOverlay? = nil, excludedWindows: [UInt32]? = nil,
                requireNamedAudio: Bool? = nil, frameRateMode: FrameRateMode? = nil) {
        self.duration = duration
        self.fps = fps
        self.microphone = microphone
        self.appAudio = appAudio
        self.showCursor = showCursor
        self.video = video
        self.notify = notify
        self.audioDevice = audioDevice
        self.microphoneDevice = microphoneDevice
        self.audioApplication = audioApplication
        self.area = area
        self.camera = camera
        self.excludedWindows = excludedWindows
        self.requireNamedAudio = requireNamedAudio
        self.frameRateMode = frameRateMode
    }
}

/// Video settings. The default favours low CPU: H.264, and screen content compresses well even
/// at `ultrafast`.
public struct VideoEncoding: Codable, Sendable, Equatable {
    /// x264's preset names, for every codec (each encoder's own speed steps are mapped from them).
    public var preset: String
    /// Target bit rate in bits per second; nil uses constant quality (`quality`, else `crf`).
    public var bitRate: Int?
    public var crf: Int
    /// Frames between keyframes; nil means one per second.
    public var keyframeInterval: Int?
    /// nil (absent on the wire) is H.264.
    public var codec: VideoCodec?
    /// Constant quality in the same words for every codec; overrides `crf`. Not with `bitRate`.
    public var quality: VideoQuality?

    public init(preset: String = "ultrafast", bitRate: Int? = nil, crf: Int = 23, keyframeInterval: Int? = nil,
                codec: VideoCodec? = nil, quality: VideoQuality? = nil) {
        self.preset = preset
        self.bitRate = bitRate
        self.crf = crf
        self.keyframeInterval = keyframeInterval
        self.codec = codec
        self.quality = quality
    }

    public static let `default` = VideoEncoding()
}

/// What replayd tells a client; labelled like `ClientRequest` (`{"status":{"status":{…}}}`).
public enum DaemonEvent: Codable, Sendable, Equatable {
    /// The answer to `hello`: the major versions match and requests may follow. `minorVersion`
    /// and `capabilities` (what the daemon offers) are sent since 2.1; absent: 2.0, none.
    case welcome(protocolVersion: Int, daemonPID: Int32, minorVersion: Int? = nil, capabilities: [String]? = nil)
    case recordingStarted(recording: RecordingStarted)
    case progress(progress: RecordingProgress)
    case recordingFinished(summary: RecordingSummary)
    /// The answer to `pauseRecording` (also when it was paused already).
    case recordingPaused(id: String)
    /// The answer to `resumeRecording` (also when it was running already).
    case recordingResumed(id: String)
    case recordings(list: [RecordingInfo])
    case exportBegin(size: Int64)
    case exportChunk
    case exportEnd
    case status(status: DaemonStatus)
    case recordingDeleted(id: String)
    case previewURL(url: String)
    /// The daemon is asking the person; the answer can take a while.
    case waitingForConsent
    case consentAgentRegistered
    /// To consent agents: an app asks to capture; answer with `answerConsent` or open `pageURL`.
    case consentRequested(prompt: ConsentPrompt)
    /// To consent agents: the request was answered (here or elsewhere) or abandoned.
    case consentResolved(requestID: String, allowed: Bool)
    /// To an agent watching (2.3): one I420 picture of what the app asking `requestID` would
    /// receive (its own windows, or the screen; protected windows black), in the body.
    case consentPreviewFrame(requestID: String, frame: CapturedFrameInfo)
    /// To an agent watching (2.3): no more pictures for `requestID`; `reason` when there were
    /// none to give (the desktop's capture cannot show one).
    case consentPreviewEnded(requestID: String, reason: String?)
    /// To consent agents: an app asked to show the person a recording's preview.
    case previewOffered(offer: PreviewOffer)
    case previewShown
    case captureStarted(width: Int, height: Int, fps: Int)
    /// One I420 picture of the app's own windows in the body (Y, then U, then V, tightly packed).
    case capturedFrame(frame: CapturedFrameInfo)
    case captureStopped(error: String?)
    case captureState(status: CaptureStatus)
    case windowProtected(id: UInt32)
    case windowUnprotected(id: UInt32)
    case extensions(list: [ExtensionInfo])
    case broadcastStarted(status: BroadcastStatus)
    case broadcasts(list: [BroadcastStatus])
    case pickerShown
    /// To consent agents: an app asks the person to pick a broadcast service.
    case pickerOffered(offer: PickerOffer)
    /// To consent agents: the app that opened picker `pickerID` has gone, so has the picker (since 2.4).
    case pickerClosed(pickerID: String)
    /// To the app that opened the picker: its broadcast's state, never its samples.
    case broadcastUpdated(status: BroadcastStatus)
    /// The portal's restore token is forgotten (there may have been none).
    case screenChoiceForgotten
    /// To the person's own tools, before `recordingStarted` or `clipBufferingStarted`: no
    /// choice of that kind (a screen, or with `pickWindow` a window) is remembered, so the
    /// desktop is asking what to share; replayd waits up to `seconds`.
    case waitingForScreenChoice(seconds: Int)
    /// The answer to `listSources`.
    case sources(sources: CaptureSources)
    /// To the person's own tools, on X11, before `recordingStarted` or `clipBufferingStarted`:
    /// the next click on a window chooses what is recorded (`CaptureArea.pickWindow`).
    case waitingForWindowPick(seconds: Int)
    case clipBufferingStarted(status: ClipStatus)
    case clipSaved(clip: ClipSaved)
    /// nil: no clip buffer is running.
    case clipStatus(status: ClipStatus?)
    case clipBufferingStopped
    /// The request failed; the daemon closes the connection after a protocol error.
    case error(code: ErrorCode, message: String)
}

/// Why a request failed: a string on the wire. A struct with a member per code rather than an
/// enum, so that a code added in a later minor version decodes (as a code this side does not
/// know) instead of making the whole `error` event unreadable; compare with the members, and
/// treat any other code as a failure of what was asked.
public struct ErrorCode: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let malformedRequest = ErrorCode(rawValue: "malformedRequest")
    public static let busy = ErrorCode(rawValue: "busy")
    public static let notFound = ErrorCode(rawValue: "notFound")
    public static let captureFailed = ErrorCode(rawValue: "captureFailed")
    public static let internalError = ErrorCode(rawValue: "internalError")
    /// The person, an agent or the policy said no.
    public static let userDeclined = ErrorCode(rawValue: "userDeclined")
    /// This client may not do that (an app asking for the store, for instance).
    public static let notPermitted = ErrorCode(rawValue: "notPermitted")
    /// A request that makes no sense now (stopping a capture that was never started, ...).
    public static let outOfOrder = ErrorCode(rawValue: "outOfOrder")
    public static let insufficientStorage = ErrorCode(rawValue: "insufficientStorage")
    /// A limit on what one app, or all apps, may hold at once: captures running, clip
    /// buffers' memory, consent prompts waiting, the store's share of the disk.
    public static let quotaExceeded = ErrorCode(rawValue: "quotaExceeded")
    public static let failedToShowPreview = ErrorCode(rawValue: "failedToShowPreview")
    /// The client's `hello` named another major protocol version (or the first message was not
    /// a `hello` of this protocol); the message names both versions.
    public static let protocolVersionMismatch = ErrorCode(rawValue: "protocolVersionMismatch")
    /// Since 2.1: a well-formed request this daemon does not know (a later minor version's); the
    /// connection stays open. Sent only to clients that said minor version 1 or later.
    public static let unsupported = ErrorCode(rawValue: "unsupported")

    /// Every code of this version, in the order docs/protocol.md lists them.
    public static let known: [ErrorCode] = [
        .malformedRequest, .busy, .notFound, .captureFailed, .internalError, .userDeclined, .notPermitted, .outOfOrder,
        .insufficientStorage, .quotaExceeded, .failedToShowPreview, .protocolVersionMismatch, .unsupported,
    ]
}

public struct RecordingStarted: Codable, Sendable, Equatable {
    public var id: String
    public var width: Int
    public var height: Int
    /// Problems that did not stop the recording, such as no audio server.
    public var warnings: [String]

    public init(id: String, width: Int, height: Int, warnings: [String]) {
        self.id = id
        self.width = width
        self.height = height
        self.warnings = warnings
    }
}

public struct RecordingProgress: Codable, Sendable, Equatable {
    public var elapsed: Double
    public var frames: Int
    public var dropped: Int
    public var bytes: Int64

    public init(elapsed: Double, frames: Int, dropped: Int, bytes: Int64) {
        self.elapsed = elapsed
        self.frames = frames
        self.dropped = dropped
        self.bytes = bytes
    }
}

public struct RecordingSummary: Codable, Sendable, Equatable {
    public var id: String
    public var duration: Double
    public var frames: Int
    public var dropped: Int
    /// Why the recording ended early; what was recorded before it is kept.
    public var error: String?

    public init(id: String, duration: Double, frames: Int, dropped: Int, error: String?) {
        self.id = id
        self.duration = duration
        self.frames = frames
        self.dropped = dropped
        self.error = error
    }
}

public struct RecordingInfo: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        case recording
        case complete
        /// Ended by a fault (disk full, content resized, daemon killed); what was written is playable.
        case interrupted
    }

    public var id: String
    public var created: Double
    public var state: State
    public var duration: Double
    public var frames: Int
    public var dropped: Int
    public var width: Int
    public var height: Int
    public var bytes: Int64
    public var error: String?
    /// The video codec; nil (absent) in entries made before 0.25. The store keeps fragmented
    /// MP4, which `exportRecording` writes unless asked for Matroska.
    public var codec: VideoCodec?

    public init(id: String, created: Double, state: State, duration: Double, frames: Int, dropped: Int,
                width: Int, height: Int, bytes: Int64, error: String?, codec: VideoCodec? = nil) {
        self.id = id
        self.created = created
        self.state = state
        self.duration = duration
        self.frames = frames
        self.dropped = dropped
        self.width = width
        self.height = height
        self.bytes = bytes
        self.error = error
        self.codec = codec
    }
}

public struct DaemonStatus: Codable, Sendable, Equatable {
    public enum Mode: String, Codable, Sendable {
        /// Runs as the person's own user; the store is theirs.
        case user
        /// Started as root with --system; runs as the `replayd` user, which alone owns the store.
        case system
    }

    public var pid: Int32
    public var display: String?
    public var activeRecordings: [String]
    public var mode: Mode
    /// The store's directory; told only to the person's own tools, nil for apps.
    public var store: String?
    /// The loopback address of the consent and preview pages.
    public var pagesURL: String?
    /// How the screen is captured, and why; told only to the person's own tools.
    public var capture: CaptureBackendInfo?
    /// The daemon's release (`ReleaseVersion.current`); absent from daemons before 0.25.
    public var version: String?
    /// Which of `activeRecordings` are paused; told only to the person's own tools (nil from older daemons).
    public var pausedRecordings: [String]?
    /// Whether the person is told that capture is on, and if not why; the person's own tools only.
    public var indicator: IndicatorStatus?

    public init(pid: Int32, display: String?, activeRecordings: [String], mode: Mode, store: String?, pagesURL: String?,
                capture: CaptureBackendInfo? = nil, version: String? = ReleaseVersion.current,
                pausedRecordings: [String]? = nil, indicator: IndicatorStatus? = nil) {
        self.pid = pid
        self.display = display
        self.activeRecordings = activeRecordings
        self.mode = mode
        self.store = store
        self.pagesURL = pagesURL
        self.capture = capture
        self.version = version
        self.pausedRecordings = pausedRecordings
        self.indicator = indicator
    }
}

/// The daemon's capture backend, in `status`.
public struct CaptureBackendInfo: Codable, Sendable, Equatable {
    /// `x11`, or `portal` (the ScreenCast portal and PipeWire).
    public var backend: String
    /// Why this one: `--capture`, or what the session looked like (`WAYLAND_DISPLAY` set…).
    public var reason: String
    /// With the portal: whether a screen the person chose is remembered (a restore token),
    /// so no dialog comes up; nil with X11, which has no such choice.
    public var remembersScreenChoice: Bool?

    public init(backend: String, reason: String, remembersScreenChoice: Bool? = nil) {
        self.backend = backend
        self.reason = reason
        self.remembersScreenChoice = remembersScreenChoice
    }
}
