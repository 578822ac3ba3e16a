import Foundation
import Logging
import ReplayCapture
import ReplayIPC
import ReplayMedia
import ReplayProcessing
import ReplaySystem
import Synchronization
import ReplaySession

/// One live broadcast: capture → shared surfaces → the sandboxed upload extension.
///
/// Pictures are converted straight into memfd surfaces the extension mapped read-only at
/// the start, so no byte is copied after capture; a message names the surface. While the
/// extension holds every surface, new frames are dropped and counted: capture never waits
/// and memory never grows. The extension is watched all along: a crash, a hang (no answer
/// to the heartbeat), memory over 50 MB or a malformed message ends this broadcast with a
/// clear error, and nothing else.
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
    let createdAt = MonotonicClock.nanoseconds()
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
    private let queue = BoundedQueue<SampleBuffer>(capacity: 2)
    private let stopFlag = StopFlag()
    private let readiness = DispatchSemaphore(value: 0)
    /// Signalled when the extension has handled `started` (or the broadcast ended first).
    private let acceptance = DispatchSemaphore(value: 0)
    /// The capture and sending threads; surfaces are unmapped only once both are done.
    private let pipeline = DispatchGroup()
    private let completion = Completion<BroadcastStatus>()
    /// Told of every change of state, service info, URL or error (the host app's connection).
    private let observers = Mutex<[@Sendable (BroadcastStatus) -> Void]>([])

    static let videoSurfaces = 4

    private struct State {
        var lifecycle = SessionLifecycle()
        var status: BroadcastStatus
        var link: (any ExtensionLink)?
        var surfaces: [SharedSurface] = []
        /// Surfaces the extension holds, with how many of its messages name each.
        var lent: [Int: (storage: PixelStorage, count: Int)] = [:]
        var surfaceOfStorage: [ObjectIdentifier: Int] = [:]
        /// Audio waiting in the ring for the extension to copy it, oldest first.
        var audioInFlight: [(offset: Int, bytes: Int)] = []
        var audioWrite = 0
        var isReady = false
        /// The extension protocol's minor version the extension announced in `ready` (0: 1.0):
        /// what its messages may carry.
        var minorVersion: UInt16 = 0
        var lastPong = MonotonicClock.nanoseconds()
        var lastPing = Int64(0)
        var pingSequence: UInt32 = 0
        /// The ping sent right after `started`: its pong says the handler took the start.
        var acceptancePing: UInt32?
        var watchdog: RepeatingTimer?
        var exited = false
        var peakMemory = 0
        /// Frames the extension's socket would not take in time.
        var unsentFrames = 0
        var counters: CaptureCounters?
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
         protectedWindows: ProtectedWindows, logger: Logger) {
        self.id = id
        self.request = request
        self.host = host
        self.hostChannel = hostChannel
        self.manifest = manifest
        self.parts = parts
        extensions = parts.extensions
        self.timing = timing
        self.protectedWindows = protectedWindows
        self.logger = logger
        var status = BroadcastStatus(id: id, extensionID: request.extensionID, scope: request.scope, state: .starting)
        status.memoryCounting = parts.extensions.memoryCounting
        state = Mutex(State(status: status))
    }

    var status: BroadcastStatus { state.withLock { $0.final ?? Self.liveStatus($0) } }

    private static func liveStatus(_ state: State) -> BroadcastStatus {
        var status = state.status
        status.framesDropped = (state.counters?.dropped ?? 0) + state.unsentFrames
        status.extensionPeakMemory = state.peakMemory
        return status
    }
    var phase: SessionPhase { state.withLock { $0.lifecycle.phase } }
    /// Shared surfaces still mapped for this broadcast (none once it is over).
    var heldSurfaces: Int { state.withLock { $0.surfaces.count } }

    /// Opens the display, starts the extension and waits for it to be ready; throws with
    /// nothing left running when any of that fails.
    func start(hidden: [String], applicationInfo: [String: String]) throws(DaemonError) {
        let filter: WindowFilter
        switch request.scope {
        case .screen: filter = .everything
        case .app:
            // Only the host app's own windows, as in-app capture: never the screen by default.
            guard let host else { throw failStart("only an app can broadcast its own windows") }
            filter = .onlyProcess(host.pid)
        }
        let capture: any ScreenCapturing
        var surfaces: [SharedSurface] = []
        do {
            capture = try parts.capture.makeScreenCapture(ScreenCaptureOptions(
                fps: min(request.fps, 30), showCursor: request.scope == .screen, filter: filter, protectedWindows: protectedWindows))
            let size = capture.frameSize
            let surfaceSize = max(PixelBuffer.byteCount(width: size.width, height: size.height), 1 << 20)
            for index in 0...Self.videoSurfaces {
                surfaces.append(try SharedSurface.create(name: "openreplaykit-broadcast-\(index)", size: surfaceSize))
            }
        } catch {
            throw failStart("\(error)")
        }
        let writable = manifest.setupFields.filter { $0.kind == .directory }.compactMap { request.setup[$0.key] }
        let link: any ExtensionLink
        do {
            link = try extensions.launch(manifest, hidden: hidden, writable: writable,
                                         network: ExtensionNetworkPolicy(setup: request.setup))
        } catch {
            throw failStart(error.message)
        }
        let hello = BroadcastCodec.encode(.hello(.init(surfaceCount: UInt16(surfaces.count), surfaceSize: UInt64(surfaces[0].size))))
        let sent: Bool
        do {
            let descriptors = try surfaces.map { try $0.readOnlyDescriptor() }
            defer { descriptors.forEach { close($0) } }
            sent = link.send(hello, descriptors: descriptors)
        } catch {
            sent = false
        }
        guard sent else {
            link.kill()
            link.close()
            throw failStart("cannot hand the shared surfaces to extension '\(manifest.id)'")
        }
        state.withLock { $0.counters = capture.counters }
        // The pool must hold the only references to the storages: it lends one only while
        // nobody else refers to it. A local array kept alive until start() returns made every
        // frame captured meanwhile "in use" and dropped, so this is a function of its own.
        let videoSurfaces = lendVideoSurfaces(surfaces, link: link, to: capture)
        let limits = BroadcastCodec.Surfaces(count: UInt16(surfaces.count), size: UInt64(surfaces[0].size))
        link.listen { [self] utterance in heard(utterance, limits: limits, from: link) }
        link.onExit { [self] how in extensionExited(how) }
        let watchdog = RepeatingTimer(interval: timing.watchInterval) { [self] in watch(link) }
        state.withLock { $0.watchdog = watchdog }

        // The extension must say it is ready before anything else happens.
        _ = readiness.wait(timeout: .now() + timing.ready)
        let (ready, ending) = state.withLock { ($0.isReady, $0.isEnding) }
        guard ready && !ending else {
            let why = state.withLock { $0.status.lastError }
                ?? (ending ? "was stopped before it was ready" : "did not get ready within \(timing.ready.formatted()) seconds")
            end(failure: why)
            _ = waitUntilFinished()
            throw DaemonError(code: .captureFailed, message: "cannot start the broadcast: extension '\(manifest.id)' \(why)")
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
        _ = acceptance.wait(timeout: .now() + timing.ready)
        if let why = state.withLock({ $0.isEnding ? ($0.status.lastError ?? "was stopped") : nil }) {
            _ = waitUntilFinished()
            throw DaemonError(code: .captureFailed, message: "cannot start the broadcast: \(why)")
        }
        // Not over an end that came meanwhile (a malformed message right after `ready`):
        // a failed broadcast stays failed, and its stop flag keeps capture from starting.
        state.withLock { state in
            if state.lifecycle.didStart() == .running { state.status.state = .live }
        }
        notifyObservers()

        let captureBox = UncheckedBox(capture)
        let queue = self.queue, stopFlag = self.stopFlag
        pipeline.enter()
        Thread.detachNewThread { [self] in
            defer { pipeline.leave() }
            do throws(CaptureError) {
                try captureBox.value.run(output: BroadcastOutput(queue: queue, session: self, video: videoSurfaces), stop: stopFlag)
            } catch {
                end(failure: error.description)
            }
            queue.close()
        }
        // Every audio source's periods lie on one grid from here (SteadyAudioTrack).
        let audioOrigin = parts.clock.now()
        startAudio()
        pipeline.enter()
        Thread.detachNewThread { [self] in
            defer { pipeline.leave() }
            sendSamples(audioOrigin: audioOrigin)
        }
        logger.info("broadcast started", metadata: ["broadcast": "\(id)", "extension": "\(manifest.id)",
                                                    "size": "\(capture.frameSize.width)x\(capture.frameSize.height)",
                                                    "scope": "\(request.scope.rawValue)"])
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

    /// Video surfaces as the capture's fixed pool, each known by its index; returned with the
    /// broadcast's picture size, for pictures of another size to be fitted into.
    private func lendVideoSurfaces(_ surfaces: [SharedSurface], link: any ExtensionLink, to capture: any ScreenCapturing)
        -> BroadcastOutput.VideoSurfaces {
        let videoStorages = surfaces.prefix(Self.videoSurfaces).map { surface in
            PixelStorage(borrowing: surface.mutableBytes!) {}  // created writable above
        }
        state.withLock { state in
            state.link = link
            state.surfaces = surfaces
            for (index, storage) in videoStorages.enumerated() { state.surfaceOfStorage[ObjectIdentifier(storage)] = index }
        }
        let size = capture.frameSize
        let pool = PixelBufferPool(fixed: videoStorages, size: size)
        capture.pool = pool
        return BroadcastOutput.VideoSurfaces(pool: pool, width: size.width, height: size.height)
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

    /// Blocks until the extension is gone and the status is final.
    func waitUntilFinished() -> BroadcastStatus { completion.wait() }

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

    private func startAudio() {
        var sources: [AudioSource] = [.app]
        if request.microphone { sources.append(.microphone) }
        let output = BroadcastOutput(queue: queue, session: self)
        for source in sources {
            do {
                let capture = try parts.capture.makeAudioCapture(source)
                let box = UncheckedBox(capture)
                Thread.detachNewThread { [self] in
                    do throws(CaptureError) { try box.value.run(output: output, stop: stopFlag) } catch {
                        logger.warning("broadcast audio ended: \(error.description)", metadata: ["broadcast": "\(id)"])
                    }
                }
            } catch {
                logger.warning("broadcast without \(source == .app ? "app audio" : "microphone"): \(error.description)",
                               metadata: ["broadcast": "\(id)"])
            }
        }
    }

    /// Hands samples to the extension as messages naming surfaces; audio as ReplayKit's
    /// steady 1024-frame periods, whatever rhythm and clock each source keeps.
    private func sendSamples(audioOrigin: MediaTime) {
        var audioTracks: [AudioSource: SteadyAudioTrack] = [:]
        while let sample = queue.pop() {
            switch sample {
            case .video(let frame):
                if isSending(at: frame.time) { sendVideo(frame) }
            case .audio(let buffer):
                // Appended in place: a copy taken out of the table would copy its pending samples.
                let periods = audioTracks[buffer.source, default: SteadyAudioTrack(origin: audioOrigin)].append(buffer)
                for period in periods where isSending(at: period.time) { sendAudio(period) }
            }
        }
        for (source, track) in audioTracks {
            let (inserted, dropped) = track.corrections
            logger.debug("broadcast audio kept on the clock", metadata: [
                "broadcast": "\(id)", "source": "\(source)", "silence inserted": "\(inserted) frames", "samples dropped": "\(dropped) frames",
            ])
        }
    }

    /// Live and not paused at `time` (capture time): a sample captured while paused is never sent.
    private func isSending(at time: MediaTime) -> Bool {
        state.withLock { $0.lifecycle.phase == .running && $0.pauses.movieTime(of: time) != nil }
    }

    private func sendVideo(_ frame: VideoSample) {
        let pixels = frame.pixels
        guard let index = state.withLock({ $0.surfaceOfStorage[ObjectIdentifier(pixels.storage)] }) else { return }
        state.withLock { state in
            let count = (state.lent[index]?.count ?? 0) + 1
            state.lent[index] = (pixels.storage, count)
        }
        let planes = (0..<3).map { plane in
            BroadcastMessage.VideoFrame.Plane(offset: UInt64(pixels.offset(ofPlane: plane)), stride: UInt32(pixels.stride(ofPlane: plane)),
                                              rows: UInt32(pixels.height(ofPlane: plane)))
        }
        // 1.1: the repeat flag and the drops so far, for an extension that speaks it.
        let additions = state.withLock { state -> BroadcastMessage.VideoFrame.Additions? in
            guard state.minorVersion >= 1 else { return nil }
            let dropped = (state.counters?.dropped ?? 0) + state.unsentFrames
            return .init(isRepeat: frame.isRepeat, framesDropped: UInt32(clamping: dropped))
        }
        let message = BroadcastMessage.video(.init(surface: UInt16(index), picture: pixels.format,
                                                   width: UInt32(pixels.width), height: UInt32(pixels.height),
                                                   planes: planes, time: frame.time.nanoseconds,
                                                   orientation: .init(frame.orientation), additions: additions))
        if send(message) {
            state.withLock { $0.status.framesSent += 1 }
        } else {
            release(surface: index)
            state.withLock { $0.unsentFrames += 1 }
        }
    }

    /// Audio goes through a ring in the last surface; the extension copies each period out
    /// and releases it. When the ring is full the period is dropped.
    private func sendAudio(_ buffer: AudioBuffer) {
        let bytes = buffer.samples.count * 4
        let message: BroadcastMessage? = state.withLock { state in
            guard let ring = state.surfaces.last?.mutableBytes, bytes <= ring.count else { return nil }
            let used = state.audioInFlight.reduce(0) { $0 + $1.bytes }
            guard used + bytes <= ring.count else { return nil }
            if state.audioWrite + bytes > ring.count { state.audioWrite = 0 }
            // Never overwrite a period the extension has not copied yet.
            if let oldest = state.audioInFlight.first, state.audioWrite <= oldest.offset, state.audioWrite + bytes > oldest.offset {
                return nil
            }
            let offset = state.audioWrite
            buffer.samples.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: ring[offset..<offset + bytes]).copyMemory(from: $0) }
            state.audioWrite += bytes
            state.audioInFlight.append((offset, bytes))
            return .audio(.init(surface: UInt16(state.surfaces.count - 1), source: buffer.source == .app ? .app : .microphone,
                                offset: UInt64(offset), frames: UInt32(buffer.frameCount), channels: UInt8(buffer.channels),
                                sampleRate: UInt32(buffer.sampleRate), time: buffer.time.nanoseconds))
        }
        guard let message else { return }
        if send(message) {
            state.withLock { $0.status.audioPeriodsSent += 1 }
        } else {
            state.withLock { _ = $0.audioInFlight.popLast() }
        }
    }

    @discardableResult
    private func send(_ message: BroadcastMessage) -> Bool {
        guard let link = state.withLock({ $0.link }) else { return false }
        let bytes = BroadcastCodec.encode(message)
        guard link.send(bytes, descriptors: []) else { return false }
        state.withLock { $0.status.messageBytesSent += bytes.count }
        return true
    }

    private func release(surface index: Int) {
        state.withLock { state in
            if index == state.surfaces.count - 1 {
                if !state.audioInFlight.isEmpty { state.audioInFlight.removeFirst() }
                return
            }
            guard let entry = state.lent[index] else { return }
            state.lent[index] = entry.count > 1 ? (entry.storage, entry.count - 1) : nil
        }
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
            DispatchQueue.global().asyncAfter(deadline: .now() + timing.closeGrace) { [self] in
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
            readiness.signal()
        case .pong(let sequence):
            let accepted = state.withLock { state in
                state.lastPong = MonotonicClock.nanoseconds()
                return state.acceptancePing == sequence
            }
            if accepted { acceptance.signal() }
        case .release(let surface): release(surface: Int(surface))
        // The extension chose to end: it is told `finished` and given the time to close its
        // stream, as at a stop.
        case .finish(let error): end(failure: "the extension ended the broadcast: \(error)", extensionAsked: true)
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
        let now = MonotonicClock.nanoseconds()
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
        stopFlag.raise()
        readiness.signal()
        acceptance.signal()
        if let failure { logger.error("broadcast failed: \(failure)", metadata: ["broadcast": "\(id)"]) }
        notifyObservers()
        guard let link, !exited else { return }
        let orderly = failure == nil || extensionAsked
        if orderly { _ = link.send(BroadcastCodec.encode(.finished), descriptors: []) }
        DispatchQueue.global().asyncAfter(deadline: .now() + (orderly ? timing.finishGrace : timing.failureGrace)) {
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
        stopFlag.raise()
        readiness.signal()
        // Surfaces are unmapped once nothing can write into them any more.
        pipeline.notify(queue: .global()) { [self] in release() }
    }

    /// Closes the connection, unmaps the surfaces, stops the watchdog: nothing of it is left.
    private func release() {
        let (link, watchdog, final) = state.withLock { state in
            state.lifecycle.didFinish()
            state.final = Self.liveStatus(state)
            defer {
                state.link = nil
                state.watchdog = nil
                state.surfaces = []
                state.lent = [:]
                state.surfaceOfStorage = [:]
                state.audioInFlight = []
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

    fileprivate func contentResized(to content: (width: Int, height: Int), fittedInto size: (width: Int, height: Int)) {
        logger.info("content resized: fitted into the broadcast's size", metadata: [
            "broadcast": "\(id)", "content": "\(content.width)x\(content.height)", "broadcastSize": "\(size.width)x\(size.height)"])
    }
}

/// The sending queue as capture's output. A broadcast keeps the size it started with (an
/// extension's encoder is set up for it): a picture of another size, from a screen or window
/// that changed, is letter-boxed into a shared surface, one copy that only such frames pay.
private struct BroadcastOutput: CaptureOutput {
    /// The capture's fixed pool of shared surfaces, and the size its pictures have.
    struct VideoSurfaces {
        let pool: PixelBufferPool
        let width: Int
        let height: Int
    }

    let queue: BoundedQueue<SampleBuffer>
    let session: BroadcastSession
    /// Nil for the audio sources' output.
    var video: VideoSurfaces?

    func offer(_ frame: VideoSample) -> Bool {
        guard let video, frame.pixels.width != video.width || frame.pixels.height != video.height else {
            return queue.offer(.video(frame))
        }
        // All surfaces with the extension: the frame is dropped, and counted, as any other.
        guard let surface = video.pool.take(width: video.width, height: video.height, format: frame.pixels.format) else { return false }
        PictureTransform.fit(frame.pixels, into: surface)
        var fitted = frame
        fitted.pixels = surface
        return queue.offer(.video(fitted))
    }

    func append(_ audio: AudioBuffer) { queue.append(.audio(audio)) }
    func formatChanged(width: Int, height: Int) {
        if let video { session.contentResized(to: (width, height), fittedInto: (video.width, video.height)) }
    }
}
