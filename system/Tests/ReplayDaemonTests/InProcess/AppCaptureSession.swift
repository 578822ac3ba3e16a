import Foundation
import Logging
import ReplayCapture
import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayIPC
import ReplayMedia
import ReplaySession
import ReplaySystem
import Synchronization
import Testing

/// In-app capture run in the test's own process, on a fake capture backend: the asking
/// process's own windows (everything else black), up to 60 fps, streamed to it as I420
/// pictures. A slow reader loses frames (counted), never stalls capture or grows memory.
/// (replayd runs in-app capture in a capture process, `CaptureProcessAppCapture`.)
final class AppCaptureSession: Sendable {
    private let pid: Int32
    private let options: CaptureOptions
    private let capture: any CaptureBackend
    private let protectedWindows: ProtectedWindows
    private let client: any CaptureClient
    private let logger: Logger
    // A few frames: enough to ride out a hiccup, small enough to bound memory at 60 fps.
    private let queue = BoundedQueue<SampleBuffer>(capacity: 4)
    private let stopFlag = StopFlag()
    private let state = Mutex((lifecycle: SessionLifecycle(), counters: CaptureCounters?.none, unsent: 0))
    private let completion = Completion<String?>()

    init(pid: Int32, options: CaptureOptions, capture: any CaptureBackend, protectedWindows: ProtectedWindows,
         client: any CaptureClient, logger: Logger) {
        self.pid = pid
        self.options = options
        self.capture = capture
        self.protectedWindows = protectedWindows
        self.client = client
        self.logger = logger
    }

    var phase: SessionPhase { state.withLock { $0.lifecycle.phase } }

    /// Opens the app's windows and starts streaming; returns the picture size.
    func start() throws(DaemonError) -> (width: Int, height: Int) {
        let capture: any ScreenCapturing
        do {
            capture = try self.capture.makeScreenCapture(ScreenCaptureOptions(
                fps: options.fps, showCursor: options.showCursor, filter: .onlyProcess(pid), protectedWindows: protectedWindows))
        } catch {
            state.withLock { $0.lifecycle.didFailToStart(error.description) }
            completion.complete(error.description)
            throw DaemonError(code: .captureFailed, message: error.description)
        }
        state.withLock { $0.counters = capture.counters }
        let box = UncheckedBox(capture)
        let queue = self.queue, stopFlag = self.stopFlag
        let output = AppCaptureOutput(queue: queue, session: self)
        Thread.detachNewThread { [self] in
            do throws(CaptureError) {
                try box.value.run(output: output, stop: stopFlag)
            } catch {
                fail(error.description)
            }
            queue.close()
        }
        Thread.detachNewThread { [self] in sendFrames() }
        if state.withLock({ $0.lifecycle.didStart() }) == .finishing { stopFlag.raise() }
        return capture.frameSize
    }

    func stop() {
        if state.withLock({ $0.lifecycle.stop() }) == .finish { stopFlag.raise() }
    }

    /// Awaits the capture's end.
    func waitUntilFinished(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        _ = try await completion.value("the capture's end", sourceLocation: sourceLocation)
    }

    /// Runs `handler` once the capture has ended (at once if it already has).
    func onFinish(_ handler: @escaping @Sendable () -> Void) { completion.onComplete { _ in handler() } }

    fileprivate func fail(_ why: String) {
        if state.withLock({ $0.lifecycle.fail(why) }) { stopFlag.raise() }
    }

    /// Sends each picture as it comes, then, once capture has ended and the queue is drained,
    /// says why it ended.
    private func sendFrames() {
        while let sample = queue.pop() {
            guard case .video(let frame) = sample else { continue }
            let info = CapturedFrameInfo(time: frame.time.seconds, width: frame.pixels.width, height: frame.pixels.height)
            switch client.deliver(info, pixels: UnsafeRawBufferPointer(frame.pixels.bytes)) {
            case .sent: break
            case .busy: state.withLock { $0.unsent += 1 }
            case .gone: stop()
            }
        }
        let (failure, captured, dropped) = state.withLock { state in
            state.lifecycle.didFinish()
            return (state.lifecycle.failure, state.counters?.captured ?? 0, (state.counters?.dropped ?? 0) + state.unsent)
        }
        client.captureStopped(error: failure)
        logger.info("in-app capture ended", metadata: [
            "pid": "\(pid)", "captured": "\(captured)", "dropped": "\(dropped)", "error": "\(failure ?? "none")",
        ])
        completion.complete(failure)
    }
}

/// In-app capture streams whatever size the app's windows come in; a new screen size is
/// the end of this capture, said to the app.
private struct AppCaptureOutput: CaptureOutput {
    let queue: BoundedQueue<SampleBuffer>
    let session: AppCaptureSession
    func offer(_ frame: VideoSample) -> Bool { queue.offer(.video(frame)) }
    func append(_ audio: AudioBuffer) {}
    func formatChanged(width: Int, height: Int) {
        session.fail("content resized: the screen changed to \(width)x\(height) during the capture")
    }
}
