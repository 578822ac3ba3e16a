public import ReplayMedia
public import ReplaySystem

/// Where a session's pictures and sound come from: the desktop (its sources and hotkeys)
/// and its capture. A capture process picks one backend (X11 + PulseAudio, or the portal)
/// and hands it to its session, which never builds its own capture: a second backend is
/// one more conformance, not a second copy of each session.
public protocol CaptureBackend: DesktopBackend {
    /// Opens the screen, or the windows `options.filter` keeps; throws a clear error when there is none.
    func makeScreenCapture(_ options: ScreenCaptureOptions) throws(CaptureError) -> any ScreenCapturing
    /// Opens one audio source from the device or application `selection` names; throws
    /// `audioUnavailable` when no audio server answers or there is no such device or application.
    func makeAudioCapture(_ source: AudioSource, selection: AudioSelection) throws(CaptureError) -> any AudioCapturing
    /// Opens a camera for a recording's picture-in-picture; throws `cameraUnavailable` when
    /// none answers.
    func makeCamera(device: String?) throws(CaptureError) -> any CameraCapturing
}

extension CaptureBackend {
    /// A camera through PipeWire, whatever captures the screen: `device` is a PipeWire node's
    /// name or serial, nil the session manager's default camera.
    public func makeCamera(device: String?) throws(CaptureError) -> any CameraCapturing {
        try PipeWireCamera(device: device)
    }

    /// The default device of `source`.
    public func makeAudioCapture(_ source: AudioSource) throws(CaptureError) -> any AudioCapturing {
        try makeAudioCapture(source, selection: AudioSelection())
    }
}

/// Where one audio source is taken from: its default device, a device by name, or (app
/// audio) the sound of one application only.
public struct AudioSelection: Sendable, Equatable {
    /// App audio: an output (PulseAudio sink) whose monitor is recorded, or a monitor source
    /// by its own name; the microphone: an input (source). nil: the default.
    public var device: String?
    /// App audio only: just this application's sound (its streams' `application.name` or
    /// `application.process.binary`, in any case), wherever it plays.
    public var application: String?

    public init(device: String? = nil, application: String? = nil) {
        self.device = device
        self.application = application
    }
}

/// A source of pictures dated on the monotonic clock, with its size and the changes of it.
///
/// `run` blocks its thread (capture libraries are blocking C) and returns once `stop` is
/// raised; it throws when the source is lost.
public protocol ScreenCapturing: AnyObject {
    /// The size of the pictures delivered now (even, for 4:2:0).
    var frameSize: (width: Int, height: Int) { get }
    /// Where pictures are taken from; a fixed pool of shared surfaces lets them reach an
    /// upload extension without a copy. Set before `run`.
    var pool: PixelBufferPool { get set }
    var counters: CaptureCounters { get }
    func run(output: any CaptureOutput, stop: StopFlag) throws(CaptureError)
}

/// A source of interleaved float PCM dated on the same clock as the pictures.
public protocol AudioCapturing: AnyObject {
    var source: AudioSource { get }
    func run(output: any CaptureOutput, stop: StopFlag) throws(CaptureError)
}

/// Where sources deliver. Pictures are offered (a full consumer refuses, and the source
/// counts a drop: capture never waits); audio is small and always kept.
public protocol CaptureOutput: Sendable {
    func offer(_ frame: VideoSample) -> Bool
    func append(_ audio: AudioBuffer)
    /// The source's pictures now have another size (a new resolution, a rotated screen).
    func formatChanged(width: Int, height: Int)
}

/// A plain sample queue as an output, for consumers that have no use for size changes.
extension BoundedQueue: CaptureOutput where Element == SampleBuffer {
    public func offer(_ frame: VideoSample) -> Bool { offer(.video(frame)) }
    public func append(_ audio: AudioBuffer) { append(.audio(audio)) }
    public func formatChanged(width: Int, height: Int) {}
}

/// The X11 display through XShm, XDamage and XFixes, and PulseAudio (also served by
/// pipewire-pulse).
public struct X11CaptureBackend: CaptureBackend {
    public let displayName: String?
    public var name: String { "x11" }

    /// nil: `$DISPLAY` when a session starts.
    public init(displayName: String?) { self.displayName = displayName }

    public func makeScreenCapture(_ options: ScreenCaptureOptions) throws(CaptureError) -> any ScreenCapturing {
        try ScreenCapture(displayName: displayName, options: options)
    }

    public func grabHotkey(_ chord: KeyChord, onPress: @escaping @Sendable () -> Void) throws(CaptureError) -> any HotkeyRelease {
        try X11Desktop(displayName: displayName).grabHotkey(chord, onPress: onPress)
    }

    public func listSources() -> SourceListing { X11Desktop(displayName: displayName).listSources() }

    public func makeAudioCapture(_ source: AudioSource, selection: AudioSelection) throws(CaptureError) -> any AudioCapturing {
        try AudioCapture(source: source, selection: selection)
    }
}
