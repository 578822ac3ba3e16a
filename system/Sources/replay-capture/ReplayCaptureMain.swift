import FoundationEssentials
import Dispatch
import Logging
import ReplayCapture
import ReplayCaptureModel
import ReplayCodec
import ReplayIPC
import ReplayMedia
import ReplaySession
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// replay-capture: one recording, clip buffer, in-app capture or broadcast's capture, in a process of its own that replayd starts
// and that exits when the session ends (docs/architecture.md, "Capture processes"). It is
// handed its channel to replayd as descriptor 3 and the movie file on the first message; it
// reaches neither the store nor replayd's clients. Not for people to run.
// With --remux --container mp4|matroska [--from S --to E] it copies the movie on descriptor 3
// (its span) into descriptor 4 (an export), so a broken file that trips FFmpeg's demuxer or
// decoder ends this process, not replayd.

@main
enum CaptureProcessMain {
    static func main() {
        // Huge pages off: x264 asks for them for its pictures, 2 MB at a time.
        ProcessMemory.withoutHugePages()
        // A session taken over by a hostile picture or stream can open no userfaultfd.
        do {
            try ProcessMemory.refuseUserfaultfds()
        } catch {
            StandardStreams.writeError("replay-capture: could not confine itself further: \(error)\n")
            exit(1)
        }
        signal(SIGPIPE, SIG_IGN)
        // Control characters in what comes from outside (an app's path, an extension's output) are shown, not obeyed.
        LoggingSystem.bootstrap { VisibleTextLog.standardError(label: $0) }
        var logger = Logger(label: "replay-capture")
        logger.logLevel = ProcessInfo.processInfo.environment["REPLAY_CAPTURE_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info

        if CommandLine.arguments.dropFirst().first == "--remux" { remux(Array(CommandLine.arguments.dropFirst()), logger: logger) }
        let channel = CaptureChannel(descriptor: 3)
        guard CommandLine.arguments.count == 1 || CommandLine.arguments.dropFirst().first == "--channel-fd=3" else {
            StandardStreams.writeError("replay-capture runs one session for replayd, which starts it, or one export's remux (--remux)\n")
            exit(2)
        }
        let first = channel.receive(CaptureCommand.self)
        if case (.startAppCapture(let plan), let descriptors)? = first {
            descriptors.forEach { close($0) }
            AppCaptureRun.run(plan, channel: channel, logger: logger)
        }
        if case (.startBroadcastCapture(let plan), let descriptors)? = first {
            descriptors.forEach { close($0) }
            logger[metadataKey: "broadcast"] = "\(plan.id)"
            BroadcastCaptureRun.run(plan, channel: channel, logger: logger)
        }
        guard let (command, descriptors) = first, case .start(let plan) = command else {
            StandardStreams.writeError("replay-capture: no start message on descriptor 3 (it is started by replayd)\n")
            exit(2)
        }
        logger[metadataKey: "recording"] = "\(plan.id)"

        let shelf = ChannelShelf(channel: channel)
        if plan.destination == .store {
            guard let movie = descriptors.first else {
                _ = try? channel.send(CaptureReport.startFailed(code: .captureFailed, message: "replayd handed no movie file"))
                exit(1)
            }
            shelf.hand(movie, for: plan.id)
        }
        if case .clipBuffer(_, _, spills: true) = plan.destination {
            guard let spill = descriptors.first else {
                _ = try? channel.send(CaptureReport.startFailed(code: .captureFailed, message: "replayd handed no file for the clip buffer"))
                exit(1)
            }
            shelf.hand(spill, for: plan.id)
        }

        let tokens = RestoreTokenKeeper()
        let backend = makeBackend(plan.backend, tokens: tokens)
        let protectedWindows = ProtectedWindows()
        protectedWindows.replace(with: plan.protectedWindows)
        let session = RecordingSession(
            id: plan.id, options: plan.options, destination: plan.destination,
            filter: plan.onlyProcess.map(WindowFilter.onlyProcess) ?? .everything,
            store: shelf, parts: RecordingParts(capture: backend), protectedWindows: protectedWindows, logger: logger)

        @Sendable func status() -> CaptureProcessStatus {
            CaptureProcessStatus(phase: session.phase, progress: session.progress(), clips: session.clipStatus(), restoreToken: tokens.token)
        }

        do throws(DaemonError) {
            let started = try session.start()
            // Where it is first: replayd reads the status before the answer, so it knows both at once.
            try? channel.send(CaptureReport.status(status()))
            try? channel.send(CaptureReport.started(started))
            returnFreedMemoryAfterFirstFrames()
        } catch {
            try? channel.send(CaptureReport.startFailed(code: error.code, message: error.message))
            exit(1)
        }

        // The movie is closed: replayd hears the summary, and the process ends, handing back every byte.
        session.onFinish { summary in
            try? channel.send(CaptureReport.status(status()))
            try? channel.send(CaptureReport.finished(summary))
            exit(0)
        }
        // Twice a second replayd hears where the session is (its progress events come from this).
        let statusTimer = RepeatingTimer(interval: 0.5) { try? channel.send(CaptureReport.status(status())) }

        while let (command, attached) = channel.receive(CaptureCommand.self) {
            switch command {
            case .start, .startAppCapture, .startBroadcastCapture:
                attached.forEach { close($0) }
                try? channel.send(CaptureReport.refused(code: .outOfOrder, message: "the session has started already"))
            case .releaseFrame, .releaseAudio, .broadcastLive:
                break  // a recording lends replayd no picture
            case .pause, .resume:
                do throws(DaemonError) {
                    if command == .pause { try session.pause() } else { try session.resume() }
                    try? channel.send(CaptureReport.done)
                } catch {
                    try? channel.send(CaptureReport.refused(code: error.code, message: error.message))
                }
                try? channel.send(CaptureReport.status(status()))
            case .stop:
                session.stop()
            case .end(let why):
                session.end(because: why)
            case .saveClip(let seconds, let trigger, let id):
                guard let file = attached.first else {
                    try? channel.send(CaptureReport.refused(code: .captureFailed, message: "replayd handed no file for the clip"))
                    continue
                }
                shelf.hand(file, for: id)
                do throws(DaemonError) {
                    let saved = try session.saveClip(last: seconds.map { MediaTime(seconds: $0) }, trigger: trigger, as: id)
                    // The status that lists the save first: whoever asks next hears of it.
                    try? channel.send(CaptureReport.status(status()))
                    try? channel.send(CaptureReport.clipSaved(saved))
                } catch {
                    try? channel.send(CaptureReport.refused(code: error.code, message: error.message))
                }
                shelf.release(id)
            case .protectedWindows(let windows):
                protectedWindows.replace(with: windows)
            }
        }
        // replayd closed the channel (it stopped, or died): the movie is finished and kept all the same.
        statusTimer.cancel()
        logger.info("replayd closed the channel: the recording ends, kept")
        session.stop()
        _ = session.waitUntilFinished()
        exit(0)
    }
}

extension CaptureProcessMain {
    /// The display replayd named, or the portal with the person's earlier choice (a new
    /// choice's token lands in `tokens`, for the status to carry back).
    static func makeBackend(_ backend: CaptureStart.Backend, tokens: RestoreTokenKeeper) -> any CaptureBackend {
        switch backend {
        case .x11(let display):
            return X11CaptureBackend(displayName: display)
        case .portal(let restoreToken, let dialogTimeout):
            if let restoreToken { tokens.keep(restoreToken) }
            return PortalCaptureBackend(tokens: ScreenCastTokens(monitor: tokens, window: tokens), responseTimeout: dialogTimeout)
        }
    }

    /// From here the same few loops run for the whole session: a second on, once the first
    /// pictures are encoded, the free pages that starting left in malloc's arenas go back to
    /// the system: what set-up allocated and freed.
    static func returnFreedMemoryAfterFirstFrames() {
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) { ProcessMemory.returnFreedMemory() }
    }

    /// The portal's token for a choice the person made in this process's dialog: nil when
    /// the token it was started with served (or there is no portal).
    static func newToken(_ tokens: RestoreTokenKeeper, startedWith backend: CaptureStart.Backend) -> String? {
        guard case .portal(let restoreToken, _) = backend, let token = tokens.token, token != restoreToken else { return nil }
        return token
    }

    /// Remuxes (trims) descriptor 3 into descriptor 4 and exits: 0 when done, else 1 with one
    /// line on standard error saying why.
    static func remux(_ arguments: [String], logger: Logger) -> Never {
        guard let job = RemuxJob(arguments: arguments) else {
            StandardStreams.writeError("replay-capture: not a remux: \(arguments.joined(separator: " "))\n")
            exit(2)
        }
        let container: MovieRemuxer.Container = job.container == .matroska ? .matroska : .mp4
        do throws(CodecError) {
            if let span = job.span {
                let report = try MovieTrimmer.trim("/proc/self/fd/3", to: "/proc/self/fd/4", from: span.lowerBound,
                                                   to: span.upperBound, container: container)
                logger.debug("trimmed \(span.lowerBound)–\(span.upperBound) s: \(report)")
            } else {
                try MovieRemuxer.remux("/proc/self/fd/3", to: "/proc/self/fd/4", container: container)
            }
            exit(0)
        } catch {
            StandardStreams.writeError("\(error)\n")
            exit(1)
        }
    }
}
