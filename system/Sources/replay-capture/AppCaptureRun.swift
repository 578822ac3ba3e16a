import FoundationEssentials
import Logging
import ReplayCapture
import ReplayCaptureModel
import ReplayIPC
import ReplayMedia
import ReplaySession
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// In-app capture in a capture process: the app's own windows (everything else black) are
/// captured here and each picture is copied into a slot of one memfd that replayd maps
/// read-only; replayd sends it on to the app and hands the slot back. While every slot is
/// with replayd a new picture is dropped and counted: capture never waits on the app.
enum AppCaptureRun {
    static let slots = 3

    static func run(_ plan: AppCaptureStart, channel: CaptureChannel, logger: Logger) -> Never {
        let protectedWindows = ProtectedWindows()
        protectedWindows.replace(with: plan.protectedWindows)
        let tokens = RestoreTokenKeeper()
        let backend = CaptureProcessMain.makeBackend(plan.backend, tokens: tokens)
        let capture: any ScreenCapturing
        let surface: SharedSurface
        let slotSize: Int
        do {
            capture = try backend.makeScreenCapture(ScreenCaptureOptions(
                fps: plan.fps, showCursor: plan.showCursor, filter: plan.wholeScreen == true ? .everything : .onlyProcess(plan.pid),
                protectedWindows: protectedWindows))
            slotSize = PixelBuffer.byteCount(width: capture.frameSize.width, height: capture.frameSize.height)
            surface = try SharedSurface.create(name: "openreplaykit-app-capture", size: max(slotSize * slots, 1))
        } catch {
            try? channel.send(CaptureReport.startFailed(code: .captureFailed, message: "\(error)"))
            exit(1)
        }
        do {
            let descriptor = try surface.readOnlyDescriptor()
            defer { close(descriptor) }
            try channel.send(CaptureReport.appCaptureStarted(width: capture.frameSize.width, height: capture.frameSize.height,
                                                             slots: slots, slotSize: slotSize, restoreToken: CaptureProcessMain.newToken(tokens, startedWith: plan.backend)),
                             descriptors: [descriptor])
        } catch {
            try? channel.send(CaptureReport.startFailed(code: .captureFailed, message: "cannot share the pictures with replayd: \(error)"))
            exit(1)
        }
        CaptureProcessMain.returnFreedMemoryAfterFirstFrames()

        let stop = StopFlag()
        let output = SlotOutput(surface: surface, slotSize: slotSize, channel: channel, stop: stop)
        let captureBox = UncheckedBox(capture)
        Threads.detach {
            let failure: String?
            do throws(CaptureError) {
                try captureBox.value.run(output: output, stop: stop)
                failure = output.failure
            } catch {
                failure = error.description
            }
            let counters = captureBox.value.counters
            try? channel.send(CaptureReport.appCaptureEnded(error: failure, captured: counters.captured, dropped: counters.dropped))
            exit(0)
        }

        while let (command, attached) = channel.receive(CaptureCommand.self) {
            attached.forEach { close($0) }
            switch command {
            case .releaseFrame(let slot): output.release(slot)
            case .protectedWindows(let windows): protectedWindows.replace(with: windows)
            case .stop, .end: stop.raise()
            default:
                try? channel.send(CaptureReport.refused(code: .outOfOrder, message: "an in-app capture takes only stop and releaseFrame"))
            }
        }
        // replayd closed the channel (the app left, or replayd died): nobody to stream to.
        logger.info("replayd closed the channel: the in-app capture ends")
        exit(0)
    }
}

/// The capture's output: each picture copied into a free slot and announced to replayd.
private final class SlotOutput: CaptureOutput, Sendable {
    private let surface: SharedSurface
    private let slotSize: Int
    private let channel: CaptureChannel
    private let stop: StopFlag
    private let state = Mutex((lent: Set<Int>(), failure: String?.none))

    init(surface: SharedSurface, slotSize: Int, channel: CaptureChannel, stop: StopFlag) {
        self.surface = surface
        self.slotSize = slotSize
        self.channel = channel
        self.stop = stop
    }

    var failure: String? { state.withLock { $0.failure } }

    func offer(_ frame: VideoSample) -> Bool {
        let bytes = frame.pixels.bytes
        guard bytes.count <= slotSize, let writable = surface.mutableBytes,
              let slot = state.withLock({ state -> Int? in
                  guard let free = (0..<AppCaptureRun.slots).first(where: { !state.lent.contains($0) }) else { return nil }
                  state.lent.insert(free)
                  return free
              }) else { return false }
        UnsafeMutableRawBufferPointer(rebasing: writable[slot * slotSize..<slot * slotSize + bytes.count]).copyMemory(from: UnsafeRawBufferPointer(bytes))
        let report = CaptureReport.frame(slot: slot, bytes: bytes.count, time: frame.time.seconds,
                                         width: frame.pixels.width, height: frame.pixels.height)
        guard (try? channel.send(report)) != nil else {
            release(slot)
            return false
        }
        return true
    }

    func release(_ slot: Int) { state.withLock { _ = $0.lent.remove(slot) } }

    func append(_ audio: AudioBuffer) {}

    /// The app's pictures keep the size they started with: a new screen size ends the capture.
    func formatChanged(width: Int, height: Int) {
        state.withLock { $0.failure = $0.failure ?? "content resized: the screen changed to \(width)x\(height) during the capture" }
        stop.raise()
    }
}
