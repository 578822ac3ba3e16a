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

/// A broadcast's capture run by a capture process of its own (`replay-capture`): the process
/// makes the shared surfaces and writes into them; replayd only passes their read-only
/// descriptors to the extension, checks each sample the process names against them, and
/// sends it on. A process that dies ends this broadcast alone, saying which signal ended it;
/// libraries that crash (PipeWire, libyuv, the X server's replies) take no other session.
final class CaptureProcessBroadcastCapture: BroadcastFeed {
    private let plan: BroadcastCaptureStart
    private let launcher: any CaptureProcessLauncher
    private let protectedWindows: ProtectedWindows
    private let keepToken: @Sendable (String) -> Void
    private let logger: Logger
    /// The answer to the start: the surfaces, or why not (the process's own word, or how it ended first).
    private let answer = Completion<Result<BroadcastCaptureOpened, DaemonError>>()
    private let done = Completion<Void>()
    private let state = Mutex(State())

    private struct State {
        var link: CaptureProcessLink?
        var over = false
        var limits: BroadcastCodec.Surfaces?
        var deliver: (@Sendable (BroadcastMessage) -> Bool)?
        var ended: (@Sendable (String?) -> Void)?
        /// What the process said at its end (nil inside: it ended well); nil if it never said.
        var ending: String??
        var dropped = 0
        var stopped = false
    }

    init(plan: BroadcastCaptureStart, launcher: any CaptureProcessLauncher, protectedWindows: ProtectedWindows,
         keepToken: @escaping @Sendable (String) -> Void, logger: Logger) {
        self.plan = plan
        self.launcher = launcher
        self.protectedWindows = protectedWindows
        self.keepToken = keepToken
        var logger = logger
        logger[metadataKey: "broadcast"] = "\(plan.id)"
        self.logger = logger
    }

    var dropped: Int { state.withLock { $0.dropped } }

    /// replayd maps none of the surfaces: the process and the extension do.
    var surfacesHeld: Int { 0 }

    func open(then opened: @escaping @Sendable (Result<BroadcastCaptureOpened, DaemonError>) -> Void) {
        let link: CaptureProcessLink
        do {
            link = try CaptureProcessLink(launcher: launcher, id: plan.id, protectedWindows: protectedWindows)
        } catch {
            done.complete(())
            return opened(.failure(DaemonError(code: .captureFailed, message: "cannot start the capture process: \(error)")))
        }
        // Kept before the process is heard: what it reports may be answered at once.
        state.withLock { $0.link = link }
        link.start(label: "broadcast-capture-\(plan.id)", { [plan] windows in
            var plan = plan
            plan.protectedWindows = windows
            return .startBroadcastCapture(plan)
        }, heard: { [weak self] report, descriptors in self?.heard(report, descriptors: descriptors) != nil },
           ended: { [weak self] status in self?.ended(exitStatus: status) })
        let process = link.process
        answer.onComplete { [logger] answer in
            if case .success = answer {
                logger.debug("broadcast capture process started", metadata: ["pid": "\(process.pid)"])
            } else {
                process.kill()  // it says it is ending, or has ended; it is not waited for
            }
            opened(answer)
        }
    }

    func run(audioOrigin: MediaTime, deliver: @escaping @Sendable (BroadcastMessage) -> Bool,
             ended: @escaping @Sendable (String?) -> Void) {
        let over = state.withLock { state -> Bool in
            state.deliver = deliver
            state.ended = ended
            return state.over
        }
        if over { return ended(state.withLock { $0.ending ?? nil } ?? "the capture process ended before the broadcast was live") }
        tell(.broadcastLive)
    }

    func release(surface: Int) { tell(.releaseFrame(slot: surface)) }

    func stop() {
        let process = state.withLock { state -> CaptureProcessHandle? in
            state.stopped = true
            return state.link?.process
        }
        tell(.stop)
        // A process that will not stop is not waited for: its surfaces are the extension's to let go.
        if let process {
            launcher.timers.after(5) { [weak self] in
                if self?.done.value == nil { process.kill() }
            }
        }
    }

    func whenDone(_ handler: @escaping @Sendable () -> Void) { done.onComplete { _ in handler() } }

    private func tell(_ command: CaptureCommand) { state.withLock { $0.link }?.tell(command) }

    /// One report. What the process names is checked against the surfaces it made: a message
    /// that is not a sample (or a count of drops), or points outside them, is a broken process,
    /// and ends it.
    private func heard(_ report: CaptureReport, descriptors: [Int32]) {
        // Only the surfaces of a usable start are kept (the session closes them); the rest are closed here.
        var descriptors = descriptors
        defer { descriptors.forEach { close($0) } }
        switch report {
        case .broadcastCaptureOpened(let width, let height, let surfaceSize, let restoreToken):
            guard answer.value == nil else { return broken("opened its capture twice") }
            guard Self.usable(descriptors, size: surfaceSize), (1...16384).contains(width), (1...16384).contains(height) else {
                answer.complete(.failure(DaemonError(code: .captureFailed, message: "the capture process shared no usable surfaces")))
                broken("shared no usable surfaces")
                return
            }
            if let restoreToken { keepToken(restoreToken) }
            state.withLock { $0.limits = BroadcastCodec.Surfaces(count: UInt16(descriptors.count), size: UInt64(surfaceSize)) }
            answer.complete(.success(BroadcastCaptureOpened(width: width, height: height, surfaceSize: surfaceSize, descriptors: descriptors)))
            descriptors = []
        case .startFailed(let code, let message):
            answer.complete(.failure(DaemonError(code: code, message: message)))
        case .broadcastSample(let bytes):
            forward(bytes)
        case .broadcastCaptureEnded(let error):
            let ended = state.withLock { state -> (@Sendable (String?) -> Void)? in
                state.ending = .some(error)
                defer { state.ended = nil }
                return state.ended
            }
            ended?(error)
        default:
            logger.warning("a broadcast's capture process sent \(report), which is not a broadcast's: ignored")
        }
    }

    /// The video surfaces and the audio ring: as many as a broadcast has, each a memfd at
    /// least `size` bytes long.
    private static func usable(_ descriptors: [Int32], size: Int) -> Bool {
        guard descriptors.count == BroadcastCaptureOpened.videoSurfaces + 1, (1...(1 << 30)).contains(size) else { return false }
        // pread at offset 0 proves it is a file to read (not a socket or pipe); its end, the size.
        return descriptors.allSatisfy { descriptor in
            var byte: UInt8 = 0
            return pread(descriptor, &byte, 1, 0) == 1 && lseek(descriptor, 0, SEEK_END) >= off_t(size)
        }
    }

    /// Sends one sample on, or hands its surface back at once when it is not sent.
    private func forward(_ bytes: Data) {
        let (limits, deliver) = state.withLock { ($0.limits, $0.deliver) }
        guard let limits, let deliver else { return }
        let message: BroadcastMessage
        do {
            message = try BroadcastCodec.decode(framed: [UInt8](bytes), surfaces: limits)
        } catch {
            return broken("named a sample that is not one (\(error))")
        }
        switch message {
        case .video(let picture) where Int(picture.surface) < BroadcastCaptureOpened.videoSurfaces:
            if let dropped = picture.additions?.framesDropped { state.withLock { $0.dropped = Int(dropped) } }
            if !deliver(message) { tell(.releaseFrame(slot: Int(picture.surface))) }
        case .audio(let period) where Int(period.surface) == BroadcastCaptureOpened.videoSurfaces:
            if !deliver(message) { tell(.releaseAudio(offset: Int(period.offset))) }
        case .dropped(let total):
            // Said while no picture carries the count (the extension holds every surface).
            state.withLock { $0.dropped = max($0.dropped, Int(total)) }
            _ = deliver(message)
        default:
            broken("sent \(message), which is not a sample in its place")
        }
    }

    /// Ends a process that broke the channel's rules, and reads nothing more it sent.
    private func broken(_ what: String) {
        logger.error("a broadcast's capture process \(what): it is ended")
        state.withLock { $0.link }?.breakOff()
    }

    /// The process is gone and every report read: the broadcast hears why capture ended if the
    /// process did not say (it crashed, or was killed).
    private func ended(exitStatus status: Int32) {
        let (ending, ended, stopped) = state.withLock { state in
            state.over = true
            defer {
                state.ended = nil
                state.deliver = nil
            }
            return (state.ending, state.ended, state.stopped)
        }
        answer.complete(.failure(CaptureProcessHandle.endedWhileStarting(CaptureProcessHandle.describe(status: status))))
        if ending == nil {
            let failure = "the capture process \(CaptureProcessHandle.describe(status: status))"
            if !stopped { logger.error("broadcast capture: \(failure)") }
            ended?(failure)
        }
        done.complete(())
    }
}
