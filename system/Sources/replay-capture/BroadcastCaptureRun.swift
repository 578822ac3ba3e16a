import FoundationEssentials
import Logging
import ReplayCapture
import ReplayCaptureModel
import ReplayIPC
import ReplayMedia
import ReplaySession
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// A broadcast's capture in a capture process: `BroadcastCapture` converts pictures and
/// sound straight into shared surfaces made here, whose read-only descriptors go to replayd
/// (which hands them to the extension); each sample goes to replayd as the extension message
/// naming it, and its surface comes back with `releaseFrame` or `releaseAudio`.
enum BroadcastCaptureRun {
    static func run(_ plan: BroadcastCaptureStart, channel: CaptureChannel, logger: Logger) -> Never {
        let protectedWindows = ProtectedWindows()
        protectedWindows.replace(with: plan.protectedWindows)
        let tokens = RestoreTokenKeeper()
        let backend = CaptureProcessMain.makeBackend(plan.backend, tokens: tokens)
        let capture = BroadcastCapture(options: plan.options, backend: backend, protectedWindows: protectedWindows, logger: logger)
        let opened: BroadcastCaptureOpened
        do throws(DaemonError) {
            opened = try capture.open()
        } catch {
            try? channel.send(CaptureReport.startFailed(code: error.code, message: error.message))
            exit(1)
        }
        do {
            defer { opened.descriptors.forEach { close($0) } }
            try channel.send(CaptureReport.broadcastCaptureOpened(width: opened.width, height: opened.height,
                                                                  surfaceSize: opened.surfaceSize,
                                                                  restoreToken: CaptureProcessMain.newToken(tokens, startedWith: plan.backend)),
                             descriptors: opened.descriptors)
        } catch {
            try? channel.send(CaptureReport.startFailed(code: .captureFailed, message: "cannot share the surfaces with replayd: \(error)"))
            exit(1)
        }
        CaptureProcessMain.returnFreedMemoryAfterFirstFrames()
        // Once nothing writes into the surfaces any more (stopped, or never started), the process is done.
        let finish: @Sendable () -> Void = { capture.whenDone { exit(0) } }

        var live = false
        while let (command, attached) = channel.receive(CaptureCommand.self) {
            attached.forEach { close($0) }
            switch command {
            case .broadcastLive where !live:
                live = true
                capture.run(audioOrigin: MediaTime(nanoseconds: MonotonicClock.nanoseconds()), deliver: { message in
                    (try? channel.send(CaptureReport.broadcastSample(Data(BroadcastCodec.encode(message))))) != nil
                }, ended: { failure in
                    try? channel.send(CaptureReport.broadcastCaptureEnded(error: failure))
                    capture.stop()
                    finish()
                })
            case .releaseFrame(let surface): capture.release(surface: surface)
            case .releaseAudio(let offset): capture.releaseAudio(offset: offset)
            case .protectedWindows(let windows): protectedWindows.replace(with: windows)
            case .stop, .end:
                capture.stop()
                if !live { finish() }
            default:
                try? channel.send(CaptureReport.refused(code: .outOfOrder, message: "a broadcast's capture takes only broadcastLive, stop and releases"))
            }
        }
        // replayd closed the channel (the broadcast ended, or replayd died): nobody to send to.
        logger.info("replayd closed the channel: the broadcast's capture ends")
        exit(0)
    }
}
