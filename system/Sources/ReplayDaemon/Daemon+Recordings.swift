import ReplayCaptureModel
import ReplayIPC

/// Where recordings, in-app captures and broadcasts capture: `parts.captures` (a capture
/// process each, in replayd), from the display or the portal.
extension Daemon {
    /// A recording or clip buffer, not started yet.
    func makeRecording(id: String, options: RecordingOptions, destination: RecordingDestination = .store,
                       filter: WindowFilter) -> any RecordingControl {
        let (backend, keeper) = captureBackend(for: ScreenArea(options.area))
        let onlyProcess: Int32? = if case .onlyProcess(let pid) = filter { pid } else { nil }
        let plan = CaptureStart(id: id, options: options, destination: destination, onlyProcess: onlyProcess, backend: backend,
                                protectedWindows: [])
        return parts.captures.recording(plan, filter: filter, store: store, protectedWindows: protectedWindows,
                                        keepToken: { keeper?.keep($0) }, logger: logger)
    }

    /// An app's capture of its own windows, not started yet.
    /// - Parameter wholeScreen: the screen, protected windows black, rather than `pid`'s windows.
    func makeAppCapture(id: String, pid: Int32, options: CaptureOptions, client: any CaptureClient,
                        wholeScreen: Bool = false) -> any AppCaptureControl {
        let (backend, keeper) = captureBackend(for: .screen)
        let plan = AppCaptureStart(id: id, pid: pid, fps: options.fps, showCursor: options.showCursor,
                                   backend: backend, protectedWindows: [], wholeScreen: wholeScreen ? true : nil)
        return parts.captures.appCapture(plan, client: client, protectedWindows: protectedWindows,
                                         keepToken: { keeper?.keep($0) }, logger: logger)
    }

    /// Makes broadcast `id`'s capture, for the options the broadcast asks for.
    func makeBroadcastCapture(id: String) -> @Sendable (BroadcastCaptureOptions) -> any BroadcastFeed {
        let (backend, keeper) = captureBackend(for: .screen)
        let captures = parts.captures, protectedWindows = self.protectedWindows, logger = self.logger
        return { options in
            captures.broadcastFeed(BroadcastCaptureStart(id: id, options: options, backend: backend, protectedWindows: []),
                                   protectedWindows: protectedWindows, keepToken: { keeper?.keep($0) }, logger: logger)
        }
    }

    /// What a capture captures from: the display, or the portal with the person's earlier
    /// choice for this kind of source (and where a new choice is kept).
    private func captureBackend(for area: ScreenArea) -> (backend: CaptureStart.Backend, keeper: RestoreTokenKeeper?) {
        switch configuration.capture {
        case .x11:
            return (.x11(display: configuration.displayName), nil)
        case .portal(let tokens):
            let keeper = tokens.keeper(for: ScreenCastSource(for: area))
            return (.portal(restoreToken: keeper.token, dialogTimeout: configuration.screenChoiceTimeout), keeper)
        }
    }
}
