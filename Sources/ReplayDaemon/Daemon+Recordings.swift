import Logging
import ReplayCapture
import ReplayIPC
import ReplaySession

/// Where recordings and clip buffers run.
extension Daemon {
    /// A recording or clip buffer, not started yet: in a capture process of its own, or, when
    /// the daemon was given its parts (unit tests' fakes) or finds no `replay-capture`, in replayd.
    func makeRecording(id: String, options: RecordingOptions, destination: RecordingSession.Destination = .store,
                       filter: WindowFilter) -> any RecordingControl {
        guard let launcher = captureLauncher else {
            return RecordingSession(id: id, options: options, destination: destination, filter: filter, store: store,
                                    parts: parts.recording, protectedWindows: protectedWindows, logger: logger)
        }
        let backend: CaptureStart.Backend
        let keeper: RestoreTokenKeeper?
        switch configuration.capture {
        case .x11:
            backend = .x11(display: configuration.displayName)
            keeper = nil
        case .portal(let tokens):
            keeper = tokens.keeper(for: ScreenCastRequest.Source(for: ScreenArea(options.area)))
            backend = .portal(restoreToken: keeper?.token, dialogTimeout: configuration.screenChoiceTimeout)
        }
        let onlyProcess: Int32? = if case .onlyProcess(let pid) = filter { pid } else { nil }
        let plan = CaptureStart(id: id, options: options, destination: destination, onlyProcess: onlyProcess, backend: backend,
                                protectedWindows: [])
        return CaptureProcessRecording(plan: plan, launcher: launcher, store: store, protectedWindows: protectedWindows,
                                       keepToken: { keeper?.keep($0) }, logger: logger)
    }
}
