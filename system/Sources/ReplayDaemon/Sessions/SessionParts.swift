import Logging
public import ReplayCaptureModel
public import ReplayDesktop
public import ReplaySystem

/// What sessions are built from, chosen once when the daemon starts: sessions are handed
/// these and never make their own capture, extension process or clock.
public struct SessionParts: Sendable {
    /// The desktop itself: what can be recorded, global hotkeys.
    public var desktop: any DesktopBackend
    /// Where each session's capture runs.
    var captures: any SessionCaptures
    public var extensions: any ExtensionHost
    /// The clock samples are stamped with.
    public var clock: any SessionClock
    /// What every wait of the daemon and its sessions is timed by (timeouts, graces, watchdogs,
    /// probes, settling): dispatch's timers, or a clock a test moves by hand.
    public var timers: any Timers

    init(desktop: any DesktopBackend, captures: any SessionCaptures, extensions: any ExtensionHost,
         clock: any SessionClock = MonotonicSessionClock(), timers: any Timers = DispatchTimers()) {
        self.desktop = desktop
        self.captures = captures
        self.extensions = extensions
        self.clock = clock
        self.timers = timers
    }
}

/// Where sessions capture. In replayd each session runs in a capture process of its own
/// (`CaptureProcesses`), so replayd links no capture, codec or PipeWire library and a crash
/// there ends one session; unit tests run sessions in their own process, on fakes.
protocol SessionCaptures: Sendable {
    /// A recording or clip buffer, not started yet. A new portal token goes to `keepToken`.
    func recording(_ plan: CaptureStart, filter: WindowFilter, store: RecordingStore, protectedWindows: ProtectedWindows,
                   keepToken: @escaping @Sendable (String) -> Void, logger: Logger) -> any RecordingControl
    /// An app's capture of its own windows, not started yet.
    func appCapture(_ plan: AppCaptureStart, client: any CaptureClient, protectedWindows: ProtectedWindows,
                    keepToken: @escaping @Sendable (String) -> Void, logger: Logger) -> any AppCaptureControl
    /// A broadcast's capture, not opened yet.
    func broadcastFeed(_ plan: BroadcastCaptureStart, protectedWindows: ProtectedWindows,
                       keepToken: @escaping @Sendable (String) -> Void, logger: Logger) -> any BroadcastFeed
    /// Copies the movie at `input` into `job`'s container at `output` (an export), only its
    /// span if it has one, then calls `done` with nil or why it could not; no thread waits meanwhile.
    func remux(_ input: String, to output: String, _ job: RemuxJob, then done: @escaping @Sendable (DaemonError?) -> Void)
}

/// Every session in a short-lived capture process (`replay-capture`) of its own.
struct CaptureProcesses: SessionCaptures {
    let launcher: any CaptureProcessLauncher

    init(launcher: any CaptureProcessLauncher) { self.launcher = launcher }

    func recording(_ plan: CaptureStart, filter: WindowFilter, store: RecordingStore, protectedWindows: ProtectedWindows,
                           keepToken: @escaping @Sendable (String) -> Void, logger: Logger) -> any RecordingControl {
        CaptureProcessRecording(plan: plan, launcher: launcher, store: store, protectedWindows: protectedWindows,
                                keepToken: keepToken, logger: logger)
    }

    func appCapture(_ plan: AppCaptureStart, client: any CaptureClient, protectedWindows: ProtectedWindows,
                            keepToken: @escaping @Sendable (String) -> Void, logger: Logger) -> any AppCaptureControl {
        CaptureProcessAppCapture(plan: plan, launcher: launcher, protectedWindows: protectedWindows, client: client,
                                 keepToken: keepToken, logger: logger)
    }

    func broadcastFeed(_ plan: BroadcastCaptureStart, protectedWindows: ProtectedWindows,
                               keepToken: @escaping @Sendable (String) -> Void, logger: Logger) -> any BroadcastFeed {
        CaptureProcessBroadcastCapture(plan: plan, launcher: launcher, protectedWindows: protectedWindows,
                                       keepToken: keepToken, logger: logger)
    }

    func remux(_ input: String, to output: String, _ job: RemuxJob, then done: @escaping @Sendable (DaemonError?) -> Void) {
        launcher.remux(input, to: output, job, then: done)
    }
}
