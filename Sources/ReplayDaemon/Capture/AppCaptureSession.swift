import Foundation
import Logging
import ReplayCapture
import ReplayIPC
import ReplayMedia
import ReplaySystem
import Synchronization

/// In-app capture: the asking process's own windows (everything else black), up to 60 fps,
/// streamed to it as I420 pictures. A slow reader loses frames (counted), never stalls
/// capture or grows memory.
final class AppCaptureSession: Sendable {
    private let pid: Int32
    private let options: CaptureOptions
    private let displayName: String?
    private let protectedWindows: ProtectedWindows
    private let channel: MessageChannel
    private let logger: Logger
    // A few frames: enough to ride out a hiccup, small enough to bound memory at 60 fps.
    private let queue = BoundedQueue<SampleBuffer>(capacity: 4)
    private let stopFlag = StopFlag()
    private let finished = DispatchSemaphore(value: 0)
    private let ending = Mutex((failure: String?.none, isFinished: false, handlers: [@Sendable () -> Void]()))
    private let counters = ScreenCapture.Counters()

    init(pid: Int32, options: CaptureOptions, displayName: String?, protectedWindows: ProtectedWindows,
         channel: MessageChannel, logger: Logger) {
        self.pid = pid
        self.options = options
        self.displayName = displayName
        self.protectedWindows = protectedWindows
        self.channel = channel
        self.logger = logger
    }

    /// Opens the display and starts streaming; returns the picture size.
    func start() throws(CaptureError) -> (width: Int, height: Int) {
        let capture = try ScreenCapture(
            displayName: displayName,
            options: .init(fps: options.fps, showCursor: options.showCursor, filter: .onlyProcess(pid),
                           protectedWindows: protectedWindows),
            counters: counters)
        let size = capture.frameSize
        let box = UncheckedBox(capture)
        let queue = self.queue, stopFlag = self.stopFlag
        Thread.detachNewThread { [self] in
            do throws(CaptureError) {
                try box.value.run(output: queue, stop: stopFlag)
            } catch {
                ending.withLock { $0.failure = error.description }
            }
            queue.close()
        }
        Thread.detachNewThread { [self] in sendFrames() }
        return size
    }

    func stop() { stopFlag.raise() }

    func waitUntilFinished() {
        finished.wait()
        finished.signal()
    }

    /// Runs `handler` once the capture has ended (at once if it already has).
    func onFinish(_ handler: @escaping @Sendable () -> Void) {
        let alreadyFinished = ending.withLock { ending -> Bool in
            if !ending.isFinished { ending.handlers.append(handler) }
            return ending.isFinished
        }
        if alreadyFinished { handler() }
    }

    /// Sends each picture as it comes, then, once capture has ended and the queue is drained,
    /// says why it ended.
    private func sendFrames() {
        while let sample = queue.pop() {
            guard case .video(let frame) = sample else { continue }
            let info = CapturedFrameInfo(time: frame.time.seconds, width: frame.pixels.width, height: frame.pixels.height)
            do {
                try channel.send(DaemonEvent.capturedFrame(info), body: UnsafeRawBufferPointer(frame.pixels.bytes))
            } catch {
                stopFlag.raise()
            }
        }
        let (failure, handlers) = ending.withLock { ending in
            ending.isFinished = true
            defer { ending.handlers = [] }
            return (ending.failure, ending.handlers)
        }
        try? channel.send(DaemonEvent.captureStopped(error: failure))
        logger.info("in-app capture ended", metadata: [
            "pid": "\(pid)", "captured": "\(counters.captured)", "dropped": "\(counters.dropped)", "error": "\(failure ?? "none")",
        ])
        for handler in handlers { handler() }
        finished.signal()
    }
}
