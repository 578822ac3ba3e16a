import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Logging
import ReplayCaptureModel
import ReplayIPC
import ReplayMedia
import ReplaySystem
import Synchronization

/// Where a broadcast's samples come from: `BroadcastCapture` in a capture process of its own
/// (`CaptureProcessBroadcastCapture`), or in the test's own process in unit tests. Each
/// sample is the extension message that names its place in the shared surfaces.
protocol BroadcastFeed: AnyObject, Sendable {
    /// Opens the display and makes the surfaces the extension maps, then calls `opened` once
    /// with them or why it could not; no thread waits meanwhile.
    func open(then opened: @escaping @Sendable (Result<BroadcastCaptureOpened, DaemonError>) -> Void)
    /// Starts capturing: `deliver` says whether it sent each sample; `ended` hears why capture ended.
    func run(audioOrigin: MediaTime, deliver: @escaping @Sendable (BroadcastMessage) -> Bool,
             ended: @escaping @Sendable (String?) -> Void)
    /// The extension is done with a surface.
    func release(surface: Int)
    func stop()
    /// Runs `handler` once nothing writes into the surfaces any more.
    func whenDone(_ handler: @escaping @Sendable () -> Void)
    /// Frames capture dropped so far.
    var dropped: Int { get }
    var surfacesHeld: Int { get }
}

/// One live broadcast: capture → shared surfaces → the sandboxed upload extension.
///
/// Pictures are converted straight into memfd surfaces the extension mapped read-only at
/// the start, so no byte is copied after capture; a message names the surface
/// (`BroadcastFeed`). The extension is watched all along: a crash, a hang (no answer to the
/// heartbeat), memory over 50 MB or a malformed message ends this broadcast with a clear
/// error, and nothing else.
///
/// Every wait is on an event: the extension's socket and its pidfd (`ReadableWatch`), a
/// timer for the heartbeat and memory, a semaphore for "ready". When it is over, the
/// extension is reaped, its connection closed and the surfaces unmapped before `onFinish`.
final class BroadcastSession: Sendable {
    /// How long the extension is given for each step; tests shorten them.
    struct Timing: Sendable {
        var ready: Double = 10
        var heartbeatInterval: Double = BroadcastLimits.heartbeatInterval
        var heartbeatTimeout: Double = BroadcastLimits.heartbeatTimeout
        /// A normal finish: time to send what it queued and close its stream properly.
        var finishGrace: Double = 5
        var failureGrace: Double = 0.2
        /// After its connection closed, how long to wait for its exit status before ending.
        var closeGrace: Double = 0.5
        var watchInterval: Double = 0.05
        static let standard = Timing()
    }

    let id: String
    /// When it was asked for: lists show broadcasts oldest first, so the latest is last.
    let createdAt: Int64
    let request: BroadcastRequest
    /// The app that started it through the picker, if one did: it may pause, resume and stop it.
    let host: PeerIdentity?
    /// That app's connection, which hears the broadcast's updates.
    let hostChannel: ClientOutbox?
    private let manifest: ExtensionManifest
    private let parts: SessionParts
    private let extensions: any ExtensionHost
    private let timing: Timing
    private let protectedWindows: ProtectedWindows
    private let logger: Logger
    private let state: Mutex<State>
    /// Makes the feed, for the capture options this broadcast asks for.
    private let makeFeed: @Sendable (BroadcastCaptureOptions) -> any BroadcastFeed
    /// Happens when the extension says it is ready (or the broadcast ended first).
    private let readiness = Completion<Void>()
    /// Happens when the extension has handled `started` (or the broadcast ended first).
    private let acceptance = Completion<Void>()
    private let completion = Completion<BroadcastStatus>()
    /// Told of every change of state, service info, URL or error (the host app's connection).
    private let observers = Mutex<[@Sendable (BroadcastStatus) -> Void]>([])

    private struct State {
        var lifecycle = SessionLifecycle()
        var status: BroadcastStatus
        var link: (any ExtensionLink)?
        var feed: (any BroadcastFeed)?
        var isReady = false
        /// The extension protocol's minor version the extension announced in `ready` (0: 1.0):
        /// what its messages may carry.
        var minorVersion: UInt16 = 0
        /// On `parts.timers`' clock, like every time the watchdog compares.
        var lastPong: Int64
        var lastPing = Int64(0)
        var pingSequence: UInt32 = 0
        /// The ping sent right after `started`: its pong says the handler took the start.
        var acceptancePing: UInt32?
        var watchdog: (any RepeatingTimerControl)?
        var exited = false
        var peakMemory = 0
        /// Frames the extension's socket would not take in time.
        var unsentFrames = 0
        /// The status once the broadcast is over: what was logged and reported stays what
        /// `status` says, even if capture counts a late drop while it winds down.
        var final: BroadcastStatus?
        /// Paused spans, by capture time: a sample captured while paused is never sent, even
        /// when it is handed on after the resume.
        var pauses = MovieTimeline(origin: .zero)

        var isEnding: Bool { lifecycle.stopRequested || lifecycle.failure != nil || lifecycle.phase == .finishing || lifecycle.phase.isOver }
    }

    init(id: String, request: BroadcastRequest, host: PeerIdentity?, hostChannel: ClientOutbox? = nil, manifest: ExtensionManifest,
         parts: SessionParts, timing: Timing = .standard,
         protectedWindows: ProtectedWindows, logger: Logger,
         makeFeed: @escaping @Sendable (BroadcastCaptureOptions) -> any BroadcastFeed) {
        self.id = id
        self.request = request
        self.host = host
        self.hostChannel = hostChannel
        self.manifest = manifest
        self.parts = parts
        createdAt = parts.timers.now()
        extensions = parts.extensions
        self.timing = timing
        self.protectedWindows = protectedWindows
        self.logger = logger
        self.makeFeed = makeFeed
        var status = BroadcastStatus(id: id, extensionID: request.extensionID, scope: request.scope, state: .starting)
        status.memoryCounting = parts.extensions.memoryCounting
        state = Mutex(State(status: status, lastPong: parts.timers.now()))
    }

    var status: BroadcastStatus { state.withLock { $0.final ?? Self.liveStatus($0) } }

    private static func liveStatus(_ state: State) -> BroadcastStatus {
        var status = state.status
        status.framesDropped = (state.feed?.dropped ?? 0) + state.unsentFrames
        status.extensionPeakMemory = state.peakMemory
        return status
    }
    var phase: SessionPhase { state.withLock { $0.lifecycle.phase } }
    /// Shared surfaces still mapped for this broadcast (none once it is over).
    var heldSurfaces: Int { state.withLock { $0.feed?.surfacesHeld ?? 0 } }

    /// Opens the display and starts the extension; once it is ready and has taken the start,
    /// `started` is called with nil, or with why it could not start, nothing left running
    /// then. The waits for the extension (up to `timing.ready` each) hold no thread: what
    /// follows each runs when the extension answers, or on a global queue when time is up.
    func start(hidden: [String], applicationInfo: [String: String], started: @escaping @Sendable (DaemonError?) -> Void) {
        var onlyProcess: Int32?
        if request.scope == .app {
            // Only the host app's own windows, as in-app capture: never the screen by default.
            guard let host else { return started(failStart("only an app can broadcast its own windows")) }
            onlyProcess = host.pid
        }
        let feed = makeFeed(BroadcastCaptureOptions(
            fps: min(request.fps, 30), showCursor: request.scope == .screen, onlyProcess: onlyProcess,
            audio: request.microphone ? [.app, .microphone] : [.app]))
        // Through the portal the person may be choosing a screen meanwhile. The answer comes
        // on the thread that reads every capture process: the extension is started elsewhere.
        feed.open { [self] result in
            DispatchQueue(label: "broadcast-launch").async { [self] in
                switch result {
                case .success(let opened):
                    launch(feed: feed, opened: opened, applicationInfo: applicationInfo, hidden: hidden, started: started)
                case .failure(let error):
                    feed.stop()
                    started(failStart(error.message))
                }
            }
        }
    }

    /// Hides the secret setup values, and what URLs carry, in what the extension prints or says:
    /// its libraries name what they were given (FFmpeg, a URL with its passphrase).
    private var redaction: SecretRedaction {
        SecretRedaction(secrets: manifest.setupFields.filter { $0.kind == .secret }.compactMap { request.setup[$0.key] })
    }

    /// The capture is open: the extension is started. The capture's descriptors are closed
    /// once it has them, or could not start.
    private func launch(feed: any BroadcastFeed, opened: BroadcastCaptureOpened, applicationInfo: [String: String], hidden: [String],
                        started: @escaping @Sendable (DaemonError?) -> Void) {
        let writable = manifest.setupFields.filter { $0.kind == .directory }.compactMap { request.setup[$0.key] }
        extensions.launch(manifest, hidden: hidden, writable: writable, network: ExtensionNetworkPolicy(setup: request.setup),
                          redaction: redaction) { [self] result in
            defer { opened.descriptors.forEach { close($0) } }
            switch result {
            case .success(let link):
                launched(link, feed: feed, opened: opened, applicationInfo: applicationInfo, started: started)
            case .failure(let error):
                feed.stop()
                started(failStart(error.message))
            }
        }
    }

    /// The extension runs: it gets its surfaces, and must get ready.
    private func launched(_ link: any ExtensionLink, feed: any BroadcastFeed, opened: BroadcastCaptureOpened,
                          applicationInfo: [String: String], started: @escaping @Sendable (DaemonError?) -> Void) {
        let hello = BroadcastCodec.encode(.hello(.init(surfaceCount: UInt16(opened.descriptors.count), surfaceSize: UInt64(opened.surfaceSize))))
        guard link.send(hello, descriptors: opened.descriptors) else {
            feed.stop()
            link.kill()
            link.close()
            return started(failStart("cannot hand the shared surfaces to extension '\(manifest.id)'"))
        }
        // A stop that came while the capture opened found nothing to end: it ends the start.
        let stoppedMeanwhile = state.withLock { state in
            guard !state.isEnding else { return true }
            state.link = link
            state.feed = feed
            state.status.sandboxNetwork = link.sandboxNetwork
            return false
        }
        if stoppedMeanwhile {
            feed.stop()
            link.kill()
            link.close()
            return started(failStart("was stopped before it started"))
        }
        let limits = BroadcastCodec.Surfaces(count: UInt16(opened.descriptors.count), size: UInt64(opened.surfaceSize))
        link.listen { [self] utterance in heard(utterance, limits: limits, from: link) }
        link.onExit { [self] how in extensionExited(how) }
        let watchdog = parts.timers.repeating(every: timing.watchInterval) { [self] in watch(link) }
        state.withLock { $0.watchdog = watchdog }

        // The extension must say it is ready before anything else happens.
        let size = "\(opened.width)x\(opened.height)"
        readiness.onComplete(within: timing.ready, on: parts.timers) { [self] _ in
            whenReady(feed: feed, size: size, applicationInfo: applicationInfo, started: started)
        }
    }

    /// The extension said it is ready, the broadcast ended, or time ran out: the start goes on.
    private func whenReady(feed: any BroadcastFeed, size: String, applicationInfo: [String: String],
                           started: @escaping @Sendable (DaemonError?) -> Void) {
        let (ready, ending) = state.withLock { ($0.isReady, $0.isEnding) }
        guard ready && !ending else {
            let why = state.withLock { $0.status.lastError }
                ?? (ending ? "was stopped before it was ready" : "did not get ready within \(String(printf: "%g", timing.ready)) seconds")
            end(failure: why)
            let failure = DaemonError(code: .captureFailed, message: "cannot start the broadcast: extension '\(manifest.id)' \(why)")
            return onFinish { _ in started(failure) }
        }
        send(.started(setupInfo: request.setup))
        send(.annotated(applicationInfo: applicationInfo))
        // The extension handles messages in order, so the answer to this ping comes after its
        // `broadcastStarted` returned: a handler that gives up there (a refused key, no
        // server) fails the start itself, and the person hears it from `broadcast start`.
        let probe = state.withLock { state in
            state.pingSequence &+= 1
            state.acceptancePing = state.pingSequence
            return state.pingSequence
        }
        send(.ping(probe))
        acceptance.onComplete(within: timing.ready, on: parts.timers) { [self] _ in
            if let why = state.withLock({ $0.isEnding ? ($0.status.lastError ?? "was stopped") : nil }) {
                let failure = DaemonError(code: .captureFailed, message: "cannot start the broadcast: \(why)")
                return onFinish { _ in started(failure) }
            }
            // Not over an end that came meanwhile (a malformed message right after `ready`):
            // a failed broadcast stays failed, and its stop flag keeps capture from starting.
            state.withLock { state in
                if state.lifecycle.didStart() == .running { state.status.state = .live }
            }
            notifyObservers()

            // Every audio source's periods lie on one grid from here (SteadyAudioTrack).
            feed.run(audioOrigin: parts.clock.now(), deliver: { [self] message in forward(message) }) { [self] failure in
                if let failure { end(failure: failure) }
            }
            logger.info("broadcast started", metadata: ["broadcast": "\(id)", "extension": "\(manifest.id)", "size": "\(size)",
                                                        "scope": "\(request.scope.rawValue)"])
            started(nil)
        }
    }

    private func failStart(_ why: String) -> DaemonError {
        let status = state.withLock { state in
            state.lifecycle.didFailToStart(why)
            state.status.state = .failed
            state.status.lastError = why
            return state.status
        }
        completion.complete(status)
        return DaemonError(code: .captureFailed, message: "cannot start the broadcast: \(why)")
    }

    /// Calls `observer` with the status now and after every change, until the broadcast ends.
    func observe(_ observer: @escaping @Sendable (BroadcastStatus) -> Void) {
        observers.withLock { $0.append(observer) }
        observer(status)
    }

    private func notifyObservers() {
        let status = self.status
        for observer in observers.withLock({ $0 }) { observer(status) }
    }

    func pause() { setPaused(true) }
    func resume() { setPaused(false) }

    /// Ends the broadcast normally: the extension gets `finished` and a moment to wrap up.
    func stop() { end(failure: nil) }

    /// Runs `handler` with the final status once the extension is gone and everything is released.
    func onFinish(_ handler: @escaping @Sendable (BroadcastStatus) -> Void) { completion.onComplete(handler) }

    /// Waits, holding no thread, until the extension is gone and the status is final.
    func finished() async -> BroadcastStatus { await completion.finished() }

    private func setPaused(_ paused: Bool) {
        let now = parts.clock.now()
        let changed = state.withLock { state -> Bool in
            let before = state.lifecycle.phase
            do {
                if paused { try state.lifecycle.pause() } else { try state.lifecycle.resume() }
            } catch {
                return false
            }
            guard state.lifecycle.phase != before else { return false }
            if paused { state.pauses.pause(at: now) } else { state.pauses.resume(at: now) }
            state.status.state = paused ? .paused : .live
            return true
        }
        if changed {
            send(paused ? .paused : .resumed)
            notifyObservers()
        }
    }

    /// Sends one sample the feed took, unless the broadcast is paused at its capture time or
    /// not live; says whether it went (one that did not goes back to the feed). A 1.1
    /// extension's pictures carry the drops so far, capture's and the socket's; a 1.2 one also
    /// hears them when no picture goes out (`dropped`).
    private func forward(_ message: BroadcastMessage) -> Bool {
        switch message {
        case .video(var picture):
            guard isSending(at: MediaTime(nanoseconds: picture.time)) else { return false }
            picture.additions = state.withLock { state -> BroadcastMessage.VideoFrame.Additions? in
                guard state.minorVersion >= 1 else { return nil }
                return .init(isRepeat: picture.additions?.isRepeat ?? false,
                             framesDropped: UInt32(clamping: (state.feed?.dropped ?? 0) + state.unsentFrames))
            }
            guard send(.video(picture)) else {
                state.withLock { $0.unsentFrames += 1 }
                return false
            }
            state.withLock { $0.status.framesSent += 1 }
            return true
        case .audio(let period):
            guard isSending(at: MediaTime(nanoseconds: period.time)), send(.audio(period)) else { return false }
            state.withLock { $0.status.audioPeriodsSent += 1 }
            return true
        case .dropped:
            // Capture dropped pictures and none went out to say so (the extension holds every
            // surface): a 1.2 extension hears the count now, while it still holds them.
            let total = state.withLock { state -> UInt32? in
                guard state.minorVersion >= 2, state.lifecycle.phase == .running else { return nil }
                return UInt32(clamping: (state.feed?.dropped ?? 0) + state.unsentFrames)
            }
            guard let total else { return false }
            return send(.dropped(total: total))
        default:
            return false
        }
    }

    /// Live and not paused at `time` (capture time): a sample captured while paused is never sent.
    private func isSending(at time: MediaTime) -> Bool {
        state.withLock { $0.lifecycle.phase == .running && $0.pauses.movieTime(of: time) != nil }
    }

    @discardableResult
    private func send(_ message: BroadcastMessage) -> Bool {
        guard let link = state.withLock({ $0.link }) else { return false }
        let bytes = BroadcastCodec.encode(message)
        guard link.send(bytes, descriptors: []) else { return false }
        state.withLock { $0.status.messageBytesSent += bytes.count }
        return true
    }

    /// Everything the extension says; anything malformed ends the broadcast.
    private func heard(_ utterance: ExtensionUtterance, limits: BroadcastCodec.Surfaces, from link: any ExtensionLink) {
        let bytes: [UInt8]
        switch utterance {
        case .message(let message): bytes = message
        case .unreadable(let why):
            end(failure: "the extension sent something that is not a message (\(why)); the connection was closed")
            link.kill()
            return
        case .closed:
            // Its exit status, when it comes at once, says more ("crashed (SIGSEGV)"); a process
            // that only dropped the connection is ended after a moment.
            parts.timers.after(timing.closeGrace) { [self] in
                end(failure: "the extension closed its connection before the broadcast ended")
                link.kill()
            }
            return
        }
        let message: BroadcastMessage
        do {
            message = try BroadcastCodec.decode(framed: bytes, surfaces: limits)
        } catch {
            end(failure: "the extension sent a malformed message (\(error)); the connection was closed")
            link.kill()
            return
        }
        switch message {
        case .ready(let minorVersion):
            state.withLock { state in
                state.isReady = true
                state.minorVersion = min(minorVersion ?? 0, BroadcastCodec.minorVersion)
            }
            readiness.complete(())
        case .pong(let sequence):
            let accepted = state.withLock { state in
                state.lastPong = parts.timers.now()
                return state.acceptancePing == sequence
            }
            if accepted { acceptance.complete(()) }
        case .release(let surface): state.withLock { $0.feed }?.release(surface: Int(surface))
        // The extension chose to end: it is told `finished` and given the time to close its
        // stream, as at a stop.
        case .finish(let error): end(failure: "the extension ended the broadcast: \(redaction.redact(error))", extensionAsked: true)
        case .serviceInfo(let info):
            state.withLock { $0.status.serviceInfo = info }
            notifyObservers()
        case .broadcastURL(let url):
            state.withLock { $0.status.broadcastURL = url }
            notifyObservers()
        default:
            end(failure: "the extension sent \(message), which only replayd may send; the connection was closed")
            link.kill()
        }
    }

    /// Heartbeat and memory, on every tick of the watchdog timer until the extension is gone.
    private func watch(_ link: any ExtensionLink) {
        let now = parts.timers.now()
        let usage = link.usage()
        let (lastPong, ready, lastPing) = state.withLock { state in
            state.peakMemory = max(state.peakMemory, usage.bytes)
            return (state.lastPong, state.isReady, state.lastPing)
        }
        let timeout = Int64(timing.heartbeatTimeout * 1e9)
        // The reason is recorded before the kill, so it is not taken for a crash.
        // Processes first: a fork bomb's copies also add up to too much memory.
        if usage.processes > ExtensionProcess.processLimit {
            end(failure: BroadcastLimits.processFailure(extensionID: manifest.id))
            link.kill()
        } else if usage.bytes > ExtensionProcess.memoryLimit {
            end(failure: BroadcastLimits.memoryFailure(extensionID: manifest.id, bytes: usage.bytes, breakdown: usage.breakdown))
            link.kill()
        } else if ready && now - lastPong > timeout {
            end(failure: BroadcastLimits.hangFailure(timeout: timing.heartbeatTimeout))
            link.kill()
        } else if ready && now - lastPing >= Int64(timing.heartbeatInterval * 1e9) {
            let sequence = state.withLock { state in
                state.lastPing = now
                state.pingSequence &+= 1
                return state.pingSequence
            }
            send(.ping(sequence))
        }
    }

    /// Ends the broadcast once: with `failure`, it failed; without, it finished. The
    /// extension gets `finished` and `finishGrace` to exit (an upload extension sends what it
    /// has queued and closes its stream properly) before it is killed; after a failure it did
    /// not ask for (a crash, a hang, garbage, the watchdog) it gets `failureGrace` and nothing.
    private func end(failure: String?, extensionAsked: Bool = false) {
        let (first, link, exited) = state.withLock { state -> (Bool, (any ExtensionLink)?, Bool) in
            let wasEnding = state.isEnding
            if let failure { _ = state.lifecycle.fail(failure) } else { _ = state.lifecycle.stop() }
            guard !wasEnding, !state.lifecycle.phase.isOver else { return (false, nil, false) }
            state.status.state = failure == nil ? .finished : .failed
            state.status.lastError = failure
            return (true, state.link, state.exited)
        }
        guard first else { return }
        state.withLock { $0.feed }?.stop()
        readiness.complete(())
        acceptance.complete(())
        if let failure { logger.error("broadcast failed: \(failure)", metadata: ["broadcast": "\(id)"]) }
        notifyObservers()
        guard let link, !exited else { return }
        let orderly = failure == nil || extensionAsked
        if orderly { _ = link.send(BroadcastCodec.encode(.finished), descriptors: []) }
        parts.timers.after(orderly ? timing.finishGrace : timing.failureGrace) {
            link.kill()
        }
    }

    /// The extension has exited and been reaped: whatever the reason, the broadcast is over.
    private func extensionExited(_ how: String) {
        let ending = state.withLock { state in
            state.exited = true
            return state.isEnding
        }
        // Gone without being asked to (a crash, most often): that is this broadcast's failure.
        if !ending { end(failure: "the extension \(how) before the broadcast ended") }
        let feed = state.withLock { $0.feed }
        feed?.stop()
        readiness.complete(())
        // Surfaces are unmapped once nothing can write into them any more.
        if let feed { feed.whenDone { [self] in release() } } else { release() }
    }

    /// Closes the connection, unmaps the surfaces, stops the watchdog: nothing of it is left.
    private func release() {
        let (link, watchdog, final) = state.withLock { state in
            state.lifecycle.didFinish()
            state.final = Self.liveStatus(state)
            defer {
                state.link = nil
                state.watchdog = nil
            }
            return (state.link, state.watchdog, state.final ?? state.status)
        }
        watchdog?.cancel()
        link?.close()
        notifyObservers()
        observers.withLock { $0 = [] }
        logger.info("broadcast ended", metadata: [
            "broadcast": "\(id)", "framesSent": "\(final.framesSent)", "dropped": "\(final.framesDropped)",
            "error": "\(final.lastError ?? "none")", "peakExtensionMiB": "\(BroadcastLimits.mebibytes(final.extensionPeakMemory))",
        ])
        completion.complete(final)
    }
}
