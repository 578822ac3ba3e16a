import FoundationEssentials
import Logging
import ReplayCaptureModel
import ReplayDesktop
import ReplayIPC
import ReplayMedia
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A recording or clip buffer run by a capture process of its own (`replay-capture`): replayd
/// keeps this end, which looks to the rest of replayd like the session itself.
///
/// The process gets the movie file and its end of a SOCK_SEQPACKET channel, nothing else of
/// replayd's; it reports where it is twice a second, the store entries it would write (which
/// are checked and written here), and its summary. When it dies before its summary (a crash,
/// the OOM killer), this session alone ends: its movie is kept up to the last whole fragment
/// and its summary names the signal.
final class CaptureProcessRecording: RecordingControl {
    let id: String
    let destination: RecordingDestination
    private let plan: CaptureStart
    private let launcher: any CaptureProcessLauncher
    private let store: RecordingStore
    private let protectedWindows: ProtectedWindows
    private let keepToken: @Sendable (String) -> Void
    private let logger: Logger
    private let completion = Completion<RecordingSummary>()
    /// Answers to `start`, `pause`, `resume` and `saveClip`, in the order asked; nil once the process is gone.
    private let answers = CaptureAnswers<CaptureReport>()
    private let state = Mutex(State())

    private struct State {
        var channel: CaptureChannel?
        var process: CaptureProcessHandle?
        var status: CaptureProcessStatus?
        var summary: RecordingSummary?
        /// Clip ids handed to the process, which alone it may list.
        var clipIDs: Set<String> = []
        var observer: Int?
        var stopped = false
        var endReason: String?
        /// Held until the start is answered: a process that ends meanwhile is the start's to report.
        var end = CaptureProcessEnd(held: true)
    }

    init(plan: CaptureStart, launcher: any CaptureProcessLauncher, store: RecordingStore, protectedWindows: ProtectedWindows,
         keepToken: @escaping @Sendable (String) -> Void, logger: Logger) {
        id = plan.id
        destination = plan.destination
        self.plan = plan
        self.launcher = launcher
        self.store = store
        self.protectedWindows = protectedWindows
        self.keepToken = keepToken
        self.logger = logger
    }

    var phase: SessionPhase {
        if let summary = completion.value { return summary.error == nil ? .finished : .failed }
        return state.withLock { $0.status?.phase } ?? .starting
    }

    var isFinished: Bool { completion.value != nil }

    /// The pid of the capture process, while it runs (for tests and the log).
    var processID: Int32? { state.withLock { $0.process?.pid } }

    func start(then started: @escaping @Sendable (Result<RecordingStarted, DaemonError>) -> Void) {
        var movie: Int32?
        if destination == .store {
            let path = store.moviePath(id: id)!  // ids are made by the store, always valid
            let fd = open(path.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                return started(.failure(failStart(DaemonError(code: .captureFailed,
                                                              message: "cannot create the movie file: \(String(cString: strerror(errno)))"))))
            }
            movie = fd
        } else if case .clipBuffer(_, _, spills: true) = destination {
            // A file with no name in the store: nobody can open it, and its space goes back
            // when the process holding it ends, however it ends.
            do { movie = try FileDescriptor.unnamedFile(in: store.directory.path).release() } catch {
                return started(.failure(failStart(DaemonError(code: .captureFailed, message: "cannot make the clip buffer's file in the store: \(error)"))))
            }
        }
        defer { if let movie { close(movie) } }
        let process: CaptureProcessHandle
        let channel: CaptureChannel
        do {
            (process, channel) = try launcher.launch(id: id)
        } catch {
            discardMovie()
            return started(.failure(failStart(DaemonError(code: .captureFailed, message: "cannot start the capture process: \(error)"))))
        }
        // Every change of the protected windows reaches the process at once, not at its next
        // status: the set goes with the start, and a change made meanwhile right after it.
        var plan = self.plan
        let generation = protectedWindows.generation
        plan.protectedWindows = Array(protectedWindows.windows)
        let observer = protectedWindows.observe { [weak self] windows in
            self?.tell(.protectedWindows(Array(windows)))
        }
        state.withLock {
            $0.process = process
            $0.observer = observer
        }
        // Every waiting message is read at each wake-up. At the end the channel is closed only
        // once the watch has let go of it (`ended` closes it), never under the watch.
        channel.watchReports(label: "capture-\(id)", heard: { [weak self] report, descriptors in
            descriptors.forEach { close($0) }  // a recording's process hands replayd no descriptor
            return self?.heard(report) != nil
        }, ended: { [weak self] in
            guard let self else { return channel.close() }
            answers.close()
            ended(channelClosed: true)
        })
        process.onExit { [weak self] status in self?.ended(exitStatus: status) }

        answers.ask({
            do {
                try channel.send(CaptureCommand.start(plan), descriptors: movie.map { [$0] } ?? [])
            } catch {
                process.kill()  // its end answers the start
            }
            // Only now may other commands go: the process reads `start` first.
            state.withLock { $0.channel = channel }
            return true
        }, answer: { [self] answer in startAnswered(answer, process: process, then: started) })
        if protectedWindows.generation != generation { tell(.protectedWindows(Array(protectedWindows.windows))) }
    }

    /// The process said it started, or why not, or ended first (nil).
    private func startAnswered(_ answer: CaptureReport?, process: CaptureProcessHandle,
                               then started: @escaping @Sendable (Result<RecordingStarted, DaemonError>) -> Void) {
        guard case .started(let value)? = answer else {
            // It is ending: its movie goes once it is reaped, and with it the start.
            return process.whenExited { [self] how in
                state.withLock { $0.end.held = false }
                discardMovie()
                let failure: DaemonError
                if case .startFailed(let code, let message)? = answer {
                    failure = DaemonError(code: code, message: message)
                } else {
                    failure = CaptureProcessHandle.endedWhileStarting(how)
                }
                let error = failStart(failure)
                ended()  // closes the channel once the process is reaped
                started(.failure(error))
            }
        }
        logger.debug("capture process started", metadata: ["recording": "\(id)", "pid": "\(process.pid)"])
        // A stop that came while starting is passed on now.
        let (stopped, why) = state.withLock { state in
            state.end.held = false
            return (state.stopped, state.endReason)
        }
        if let why { tell(.end(because: why)) } else if stopped { tell(.stop) }
        // It may have ended already (a duration shorter than the start).
        ended()
        started(.success(value))
    }

    private func failStart(_ error: DaemonError) -> DaemonError {
        finish(RecordingSummary(id: id, duration: 0, frames: 0, dropped: 0, error: error.message))
        return error
    }

    private func discardMovie() {
        if destination == .store { store.delete(id: id) }
    }

    func setPaused(_ paused: Bool, then done: @escaping @Sendable (DaemonError?) -> Void) {
        let what = paused ? "pause" : "resume"
        ask(paused ? .pause : .resume, what: what) { answer in
            switch answer {
            case .success(.refused(let code, let message)): done(DaemonError(code: code, message: message))
            case .success: done(nil)
            case .failure(let error): done(error)
            }
        }
    }

    func stop() {
        let running = state.withLock { state -> Bool in
            state.stopped = true
            return state.status != nil
        }
        if running { tell(.stop) }
    }

    func end(because why: String) {
        let running = state.withLock { state -> Bool in
            state.endReason = state.endReason ?? why
            return state.status != nil
        }
        if running { tell(.end(because: why)) }
    }

    func saveClip(last duration: MediaTime?, trigger: ClipSaveRecord.Trigger, as clipID: String,
                  then saved: @escaping @Sendable (Result<ClipSaved, DaemonError>) -> Void) {
        guard case .clipBuffer = destination else {
            return saved(.failure(DaemonError(code: .outOfOrder, message: "clip buffering has not started")))
        }
        let path = store.moviePath(id: clipID)!  // ids are made by the store, always valid
        let file = open(path.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard file >= 0 else {
            return saved(.failure(DaemonError(code: .captureFailed, message: "cannot save the clip: \(String(cString: strerror(errno)))")))
        }
        defer { close(file) }  // sent by then: the process holds its own
        state.withLock { _ = $0.clipIDs.insert(clipID) }
        let store = self.store
        ask(.saveClip(seconds: duration?.seconds, trigger: trigger, id: clipID), descriptors: [file], what: "save a clip") { answer in
            switch answer {
            case .success(.clipSaved(let clip)):
                return saved(.success(clip))
            case .success(.refused(let code, let message)):
                store.delete(id: clipID)
                saved(.failure(DaemonError(code: code, message: message)))
            case .success:
                store.delete(id: clipID)
                saved(.failure(DaemonError(code: .captureFailed, message: "the capture process gave no clip")))
            case .failure(let error):
                store.delete(id: clipID)
                saved(.failure(error))
            }
        }
    }

    func clipStatus() -> ClipStatus? { state.withLock { $0.status?.clips } }

    func onFinish(_ handler: @escaping @Sendable (RecordingSummary) -> Void) { completion.onComplete(handler) }

    func progress() -> RecordingProgress {
        state.withLock { $0.status?.progress } ?? RecordingProgress(elapsed: 0, frames: 0, dropped: 0, bytes: 0)
    }

    // MARK: The channel

    /// Sends a command that has no answer; a gone process is noticed by its exit. Sent under
    /// the lock `ended` takes the channel away under, so never to a descriptor closed meanwhile.
    private func tell(_ command: CaptureCommand) {
        state.withLock { state in _ = try? state.channel?.send(command) }
    }

    /// Sends `command` and calls `answered` with the process's answer, or why there is none.
    private func ask(_ command: CaptureCommand, descriptors: [Int32] = [], what: String,
                     answered: @escaping @Sendable (Result<CaptureReport, DaemonError>) -> Void) {
        guard !isFinished else {
            return answered(.failure(DaemonError(code: .outOfOrder, message: "cannot \(what): the recording is over")))
        }
        answers.ask({
            state.withLock { state in (try? state.channel?.send(command, descriptors: descriptors)) != nil }
        }, answer: { answer in
            guard let answer else {
                return answered(.failure(DaemonError(code: .captureFailed, message: "cannot \(what): the capture process is gone")))
            }
            answered(.success(answer))
        })
    }

    /// One report from the process. What it may change is checked: it lists only its own
    /// recording and the clips it was handed, and forgets only its own empty movie.
    private func heard(_ report: CaptureReport) {
        switch report {
        case .started, .startFailed, .done, .clipSaved, .refused:
            if !answers.answer(report) {
                logger.warning("a capture process answered what it was not asked: ignored", metadata: ["recording": "\(id)"])
            }
        case .status(let status):
            let token = state.withLock { state -> String? in
                let previous = state.status?.restoreToken
                state.status = status
                return status.restoreToken != previous ? status.restoreToken : nil
            }
            if let token { keepToken(token) }
        case .entry(var info):
            let allowed = state.withLock { info.id == id && destination == .store || $0.clipIDs.contains(info.id) }
            guard allowed else {
                logger.warning("a capture process listed a recording it does not own: ignored", metadata: ["recording": "\(id)"])
                return
            }
            // The file's size is read here: the process's own figure is not trusted with the store.
            info.bytes = store.fileSize(id: info.id)
            store.save(info)
        case .discard(let discarded):
            guard discarded == id, destination == .store else { return }
            store.delete(id: id)
        case .finished(let summary):
            state.withLock { $0.summary = summary }
        case .appCaptureStarted, .frame, .appCaptureEnded, .broadcastCaptureOpened, .broadcastSample, .broadcastCaptureEnded:
            logger.warning("a recording's capture process spoke of another kind of session: ignored", metadata: ["recording": "\(id)"])
        }
    }

    /// Notes the end of the channel or the process; once both (and the start) are over, the
    /// session ends: with the process's summary as it says; without one, the process was
    /// killed or crashed, and the movie is kept up to its last whole fragment.
    private func ended(channelClosed: Bool = false, exitStatus: Int32? = nil) {
        if channelClosed { logger.debug("capture channel closed", metadata: ["recording": "\(id)"]) }
        if let exitStatus { logger.debug("capture process exited", metadata: ["recording": "\(id)", "status": "\(exitStatus)"]) }
        let over = state.withLock { state -> (summary: RecordingSummary?, observer: Int?, channel: CaptureChannel?, status: Int32)? in
            // The start has been sent (and the channel kept) by the time the end is released.
            guard let status = state.end.note(channelClosed: channelClosed, exitStatus: exitStatus) else { return nil }
            let channel = state.channel
            defer {
                state.channel = nil
                state.observer = nil
            }
            return (state.summary, state.observer, channel, status)
        }
        guard let (summary, observer, channel, status) = over else { return }
        if let observer { protectedWindows.stopObserving(observer) }
        channel?.close()
        guard completion.value == nil else { return }
        if var summary {
            summary.id = id
            finish(summary)
            return
        }
        let how = CaptureProcessHandle.describe(status: status)
        logger.error("the capture process \(how): its recording ends, kept up to its last fragment", metadata: ["recording": "\(id)"])
        var kept = RecordingSummary(id: id, duration: 0, frames: 0, dropped: progress().dropped, error: "the capture process \(how)")
        if destination == .store, let info = store.keepInterrupted(id: id, why: kept.error!) {
            kept.frames = info.frames
            kept.duration = info.duration
        }
        finish(kept)
    }

    private func finish(_ summary: RecordingSummary) {
        state.withLock { $0.summary = summary }
        completion.complete(summary)
    }
}
