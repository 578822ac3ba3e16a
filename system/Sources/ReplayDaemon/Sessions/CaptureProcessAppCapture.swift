import FoundationEssentials
import Logging
import ReplayCaptureModel
import ReplayDesktop
import ReplayIPC
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where an in-app capture's pictures go: the app's connection.
protocol CaptureClient: Sendable {
    /// Hands over one picture; `.busy` when the app is behind (the picture is dropped and
    /// counted), `.gone` when its connection closed.
    func deliver(_ info: CapturedFrameInfo, pixels: UnsafeRawBufferPointer) -> CaptureDelivery
    func captureStopped(error: String?)
}

enum CaptureDelivery: Sendable {
    case sent, busy, gone
}

/// The app's connection as the capture's client: a picture is queued only while less than
/// two pictures wait for the app to read them, so a slow reader loses pictures, never
/// the connection, and the daemon's memory stays bounded.
struct ChannelCaptureClient: CaptureClient {
    let channel: ClientOutbox
    func deliver(_ info: CapturedFrameInfo, pixels: UnsafeRawBufferPointer) -> CaptureDelivery {
        guard !channel.isClosed else { return .gone }
        guard channel.hasRoom(below: pixels.count * 2) else { return .busy }
        return (try? channel.sendBulk(DaemonEvent.capturedFrame(frame: info), body: pixels)) != nil ? .sent : .gone
    }
    func captureStopped(error: String?) { try? channel.send(DaemonEvent.captureStopped(error: error)) }
}

/// An in-app capture, as replayd drives it: in a capture process (in process in unit tests).
protocol AppCaptureControl: AnyObject, Sendable {
    var phase: SessionPhase { get }
    /// Opens the app's windows and starts streaming, then calls `started` once with the
    /// picture size or why it could not; no thread waits meanwhile.
    func start(then started: @escaping @Sendable (Result<(width: Int, height: Int), DaemonError>) -> Void)
    func stop()
    /// Runs `handler` once the capture has ended (at once if it already has).
    func onFinish(_ handler: @escaping @Sendable () -> Void)
}

extension AppCaptureControl {
    /// Returns once the capture has ended, holding no thread meanwhile.
    func finished() async {
        await withCheckedContinuation { waiter in onFinish { waiter.resume() } }
    }
}

/// In-app capture run by a capture process of its own (`replay-capture`): the process
/// captures the app's windows and lends replayd each picture in a slot of a memfd that
/// replayd maps read-only; replayd sends it to the app (or drops it while the app is behind)
/// and hands the slot back. A process that dies ends this capture alone, and the app hears
/// which signal ended it.
final class CaptureProcessAppCapture: AppCaptureControl {
    private let plan: AppCaptureStart
    private let launcher: any CaptureProcessLauncher
    private let protectedWindows: ProtectedWindows
    private let client: any CaptureClient
    /// Keeps the portal's token for a choice the person made in this capture's dialog.
    private let keepToken: @Sendable (String) -> Void
    private let logger: Logger
    private let completion = Completion<String?>()
    /// The answer to the start: the pictures' size, or why not (the process's own word, or how it ended first).
    private let answer = Completion<Result<(width: Int, height: Int), DaemonError>>()
    private let state = Mutex(State())

    private struct State {
        var link: CaptureProcessLink?
        var pictures: SharedSurface?
        var slots = 0
        var slotSize = 0
        var stopped = false
        var started = false
        /// The process is gone: a start that has not returned yet fails.
        var finished = false
        /// What the process said at its end; nil if it never said (it crashed).
        var ending: (error: String?, captured: Int, dropped: Int)?
        var unsent = 0
    }

    init(plan: AppCaptureStart, launcher: any CaptureProcessLauncher, protectedWindows: ProtectedWindows,
         client: any CaptureClient, keepToken: @escaping @Sendable (String) -> Void = { _ in }, logger: Logger) {
        self.plan = plan
        self.launcher = launcher
        self.protectedWindows = protectedWindows
        self.client = client
        self.keepToken = keepToken
        self.logger = logger
    }

    var phase: SessionPhase {
        if let failure = completion.value { return failure == nil ? .finished : .failed }
        return state.withLock { $0.started ? ($0.stopped ? .finishing : .running) : .starting }
    }

    func start(then started: @escaping @Sendable (Result<(width: Int, height: Int), DaemonError>) -> Void) {
        let link: CaptureProcessLink
        do {
            link = try CaptureProcessLink(launcher: launcher, id: plan.id, protectedWindows: protectedWindows)
        } catch {
            let failure = DaemonError(code: .captureFailed, message: "cannot start the capture process: \(error)")
            completion.complete(failure.message)
            return started(.failure(failure))
        }
        // Kept before the process is heard: what it reports may be answered at once.
        state.withLock { $0.link = link }
        link.start(label: "app-capture-\(plan.id)", { [plan] windows in
            var plan = plan
            plan.protectedWindows = windows
            return .startAppCapture(plan)
        }, heard: { [weak self] report, descriptors in self?.heard(report, descriptors: descriptors) != nil },
           ended: { [weak self] status in self?.ended(exitStatus: status) })
        let process = link.process
        answer.onComplete { [self] answer in
            guard case .success(let size) = answer else {
                process.kill()  // it says it is ending, or has ended; it is not waited for
                return started(answer)
            }
            // Whichever comes first, this or the end, decides: a process gone before the start
            // is answered fails the start (the app would wait for pictures and an end it never hears).
            let (stopped, finished) = state.withLock { state in
                if !state.finished { state.started = true }
                return (state.stopped, state.finished)
            }
            if finished {
                return completion.onComplete { why in
                    started(.failure(DaemonError(code: .captureFailed, message: "the in-app capture ended as it started: \(why ?? "no reason")")))
                }
            }
            if stopped { tell(.stop) }
            logger.debug("in-app capture process started", metadata: ["pid": "\(process.pid)", "app": "\(plan.pid)"])
            started(.success(size))
        }
    }

    func stop() {
        let started = state.withLock { state in
            state.stopped = true
            return state.started
        }
        if started { tell(.stop) }
    }

    func onFinish(_ handler: @escaping @Sendable () -> Void) { completion.onComplete { _ in handler() } }

    private func tell(_ command: CaptureCommand) { state.withLock { $0.link }?.tell(command) }

    /// One report. What the process says is checked: a slot or length outside the shared
    /// memory it handed over is a broken process, and ends it.
    private func heard(_ report: CaptureReport, descriptors: [Int32]) {
        var descriptors = descriptors
        defer { descriptors.forEach { close($0) } }
        switch report {
        case .appCaptureStarted(let width, let height, let slots, let slotSize, let restoreToken):
            let shared = descriptors.isEmpty ? nil : descriptors.removeFirst()
            guard let pictures = Self.mapPictures(shared, slots: slots, slotSize: slotSize) else {
                answer.complete(.failure(DaemonError(code: .captureFailed, message: "the capture process shared no usable memory for the pictures")))
                state.withLock { $0.link }?.breakOff()
                return
            }
            if let restoreToken { keepToken(restoreToken) }
            state.withLock { state in
                state.pictures = pictures
                state.slots = slots
                state.slotSize = slotSize
            }
            answer.complete(.success((width, height)))
        case .startFailed(let code, let message):
            answer.complete(.failure(DaemonError(code: code, message: message)))
        case .frame(let slot, let bytes, let time, let width, let height):
            deliver(slot: slot, bytes: bytes, info: CapturedFrameInfo(time: time, width: width, height: height))
        case .appCaptureEnded(let error, let captured, let dropped):
            state.withLock { $0.ending = (error, captured, dropped) }
        default:
            logger.warning("an in-app capture's process sent \(report), which is not an in-app capture's: ignored", metadata: ["app": "\(plan.pid)"])
        }
    }

    /// The process's memfd mapped read-only, if it holds `slots` slots of `slotSize` bytes.
    /// The descriptor is used up either way (the mapping owns it, also when mapping fails), so
    /// it is never closed twice: a second close would close whatever took its number meanwhile.
    private static func mapPictures(_ descriptor: Int32?, slots: Int, slotSize: Int) -> SharedSurface? {
        guard let descriptor else { return nil }
        guard (1...64).contains(slots), (1...(1 << 30)).contains(slotSize) else {
            close(descriptor)
            return nil
        }
        guard let pictures = try? SharedSurface.mapReadOnly(descriptor: descriptor) else { return nil }
        return pictures.size >= slots * slotSize ? pictures : nil
    }

    private func deliver(slot: Int, bytes: Int, info: CapturedFrameInfo) {
        let pictures = state.withLock { state -> UnsafeRawBufferPointer? in
            guard let pictures = state.pictures, (0..<state.slots).contains(slot), (1...state.slotSize).contains(bytes) else { return nil }
            return UnsafeRawBufferPointer(rebasing: pictures.bytes[slot * state.slotSize..<slot * state.slotSize + bytes])
        }
        guard let pictures else {
            logger.error("an in-app capture's process named a picture outside its shared memory: it is ended", metadata: ["app": "\(plan.pid)"])
            state.withLock { $0.link }?.breakOff()
            return
        }
        // The outbox copies the picture, so the slot goes back at once.
        switch client.deliver(info, pixels: pictures) {
        case .sent: break
        case .busy: state.withLock { $0.unsent += 1 }
        case .gone: stop()
        }
        tell(.releaseFrame(slot: slot))
    }

    /// The process is gone and every report read: the capture ends, and the app hears why:
    /// what the process said, or the signal that ended it.
    private func ended(exitStatus status: Int32) {
        let (over, started) = state.withLock { state in
            state.finished = true
            defer { state.pictures = nil }
            return ((ending: state.ending, unsent: state.unsent, status: status), state.started)
        }
        answer.complete(.failure(CaptureProcessHandle.endedWhileStarting(CaptureProcessHandle.describe(status: status))))
        guard completion.value == nil else { return }
        let failure: String?
        if let ending = over.ending {
            failure = ending.error
        } else {
            failure = "the capture process \(CaptureProcessHandle.describe(status: over.status))"
            logger.error("in-app capture: \(failure!)", metadata: ["app": "\(plan.pid)"])
        }
        // Only a capture that started is the app's to hear the end of: a failed start is the start's answer.
        if started { client.captureStopped(error: failure) }
        logger.info("in-app capture ended", metadata: [
            "pid": "\(plan.pid)", "captured": "\(over.ending?.captured ?? 0)",
            "dropped": "\((over.ending?.dropped ?? 0) + over.unsent)", "error": "\(failure ?? "none")",
        ])
        completion.complete(failure)
    }
}
