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
        let (backend, keeper) = captureProcessBackend(for: ScreenArea(options.area))
        let onlyProcess: Int32? = if case .onlyProcess(let pid) = filter { pid } else { nil }
        let plan = CaptureStart(id: id, options: options, destination: destination, onlyProcess: onlyProcess, backend: backend,
                                protectedWindows: [])
        return CaptureProcessRecording(plan: plan, launcher: launcher, store: store, protectedWindows: protectedWindows,
                                       keepToken: { keeper?.keep($0) }, logger: logger)
    }

    /// An app's capture of its own windows, not started yet: in a capture process of its own,
    /// or in replayd as `makeRecording` decides.
    func makeAppCapture(id: String, pid: Int32, options: CaptureOptions, client: any CaptureClient) -> any AppCaptureControl {
        guard let launcher = captureLauncher else {
            return AppCaptureSession(pid: pid, options: options, parts: parts, protectedWindows: protectedWindows, client: client,
                                     logger: logger)
        }
        let (backend, keeper) = captureProcessBackend(for: .screen)
        let plan = AppCaptureStart(id: id, pid: pid, fps: options.fps, showCursor: options.showCursor,
                                   backend: backend, protectedWindows: [])
        return CaptureProcessAppCapture(plan: plan, launcher: launcher, protectedWindows: protectedWindows, client: client,
                                        keepToken: { keeper?.keep($0) }, logger: logger)
    }

    /// A broadcast's capture in a capture process of its own; nil (capture inside replayd)
    /// where `makeRecording` would record inside it too.
    func makeBroadcastCapture(id: String) -> (@Sendable (BroadcastCapture.Options) -> any BroadcastFeed)? {
        guard let launcher = captureLauncher else { return nil }
        let (backend, keeper) = captureProcessBackend(for: .screen)
        let protectedWindows = self.protectedWindows, logger = self.logger
        return { options in
            CaptureProcessBroadcastCapture(plan: BroadcastCaptureStart(id: id, options: options, backend: backend, protectedWindows: []),
                                           launcher: launcher, protectedWindows: protectedWindows,
                                           keepToken: { keeper?.keep($0) }, logger: logger)
        }
    }

    /// What a capture process captures from: the display, or the portal with the person's
    /// earlier choice for this kind of source (and where a new choice is kept).
    private func captureProcessBackend(for area: ScreenArea) -> (backend: CaptureStart.Backend, keeper: RestoreTokenKeeper?) {
        switch configuration.capture {
        case .x11:
            return (.x11(display: configuration.displayName), nil)
        case .portal(let tokens):
            let keeper = tokens.keeper(for: ScreenCastRequest.Source(for: area))
            return (.portal(restoreToken: keeper.token, dialogTimeout: configuration.screenChoiceTimeout), keeper)
        }
    }
}
