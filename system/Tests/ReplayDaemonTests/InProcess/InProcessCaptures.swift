import Logging
import ReplayCapture
import ReplayCodec
@testable import ReplayDaemon
import ReplayIPC
import ReplaySystem
import ReplaySession

/// Sessions run in the test's own process on fake parts (a capture backend, a movie writer, a
/// clock), where replayd starts a capture process for each: the daemon's rules and a
/// session's bookkeeping are then tested in milliseconds.
struct InProcessCaptures: SessionCaptures {
    let capture: any CaptureBackend
    let movies: any MovieSinkFactory
    let clock: any SessionClock

    func recording(_ plan: CaptureStart, filter: WindowFilter, store: RecordingStore, protectedWindows: ProtectedWindows,
                   keepToken: @escaping @Sendable (String) -> Void, logger: Logger) -> any RecordingControl {
        RecordingSession(id: plan.id, options: plan.options, destination: plan.destination, filter: filter, store: store,
                         parts: RecordingParts(capture: capture, movies: movies, clock: clock), protectedWindows: protectedWindows,
                         logger: logger)
    }

    func appCapture(_ plan: AppCaptureStart, client: any CaptureClient, protectedWindows: ProtectedWindows,
                    keepToken: @escaping @Sendable (String) -> Void, logger: Logger) -> any AppCaptureControl {
        AppCaptureSession(pid: plan.pid, options: CaptureOptions(fps: plan.fps, showCursor: plan.showCursor), capture: capture,
                          protectedWindows: protectedWindows, client: client, logger: logger)
    }

    func broadcastFeed(_ plan: BroadcastCaptureStart, protectedWindows: ProtectedWindows,
                       keepToken: @escaping @Sendable (String) -> Void, logger: Logger) -> any BroadcastFeed {
        BroadcastCapture(options: plan.options, backend: capture, protectedWindows: protectedWindows, logger: logger)
    }

    func remux(_ input: String, to output: String, _ job: RemuxJob, then done: @escaping @Sendable (DaemonError?) -> Void) {
        let container: MovieRemuxer.Container = job.container == .matroska ? .matroska : .mp4
        do {
            if let span = job.span {
                try MovieTrimmer.trim(input, to: output, from: span.lowerBound, to: span.upperBound, container: container)
            } else {
                try MovieRemuxer.remux(input, to: output, container: container)
            }
            done(nil)
        } catch {
            done(DaemonError(code: .internalError, message: error.description))
        }
    }
}

extension SessionParts {
    /// Sessions in the test's own process, on `capture`, `movies` and `clock`.
    init(capture: any CaptureBackend, movies: any MovieSinkFactory = MovieFileFactory(), extensions: any ExtensionHost,
         clock: any SessionClock = MonotonicSessionClock(), timers: any Timers = DispatchTimers()) {
        self.init(desktop: capture, captures: InProcessCaptures(capture: capture, movies: movies, clock: clock),
                  extensions: extensions, clock: clock, timers: timers)
    }

    /// Broadcast `id`'s capture, in the test's own process, hiding `protectedWindows`.
    func inProcessBroadcastFeed(id: String, protectedWindows: ProtectedWindows) -> @Sendable (BroadcastCaptureOptions) -> any BroadcastFeed {
        let captures = self.captures
        return { options in
            captures.broadcastFeed(BroadcastCaptureStart(id: id, options: options, backend: .x11(display: nil), protectedWindows: []),
                                   protectedWindows: protectedWindows, keepToken: { _ in }, logger: Logger(label: "test"))
        }
    }
}

/// In the test's own process a capture answers its start at once.
extension BroadcastCapture: BroadcastFeed {
    func open(then opened: @escaping @Sendable (Result<BroadcastCaptureOpened, DaemonError>) -> Void) {
        opened(Result { () throws(DaemonError) in try open() })
    }
}

extension AppCaptureSession: AppCaptureControl {
    func start(then started: @escaping @Sendable (Result<(width: Int, height: Int), DaemonError>) -> Void) {
        started(Result { () throws(DaemonError) in try start() })
    }
}
