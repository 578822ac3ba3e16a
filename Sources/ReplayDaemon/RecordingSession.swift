import Foundation
import Logging
import ReplayCapture
import ReplayCodec
import ReplayIPC
import ReplayMedia
import ReplayProcessing
import ReplaySystem
import Synchronization

/// One recording: screen and audio capture threads feed a queue that a writer thread
/// drains into the movie. capture → convert → queue → encode → mux → private store.
final class RecordingSession: Sendable {
    let id: String
    private let options: RecordingOptions
    private let store: RecordingStore
    private let displayName: String?
    private let protectedWindows: ProtectedWindows
    private let logger: Logger
    // About a quarter of a second of video: enough to ride out a slow frame, small enough to bound memory.
    private let queue = BoundedQueue<SampleBuffer>(capacity: 8)
    private let stopFlag = StopFlag()
    private let state = Mutex(State())
    private let finished = DispatchSemaphore(value: 0)
    private let producers = DispatchGroup()
    private let screenCounters = ScreenCapture.Counters()

    private struct State {
        var origin = MediaTime.zero
        var width = 0
        var height = 0
        var stopTime: MediaTime?
        var failure: String?
        var writtenFrames = 0
        var bytes: Int64 = 0
        var summary: RecordingSummary?
        var created = Date().timeIntervalSince1970
    }

    init(id: String, options: RecordingOptions, store: RecordingStore, displayName: String?,
         protectedWindows: ProtectedWindows, logger: Logger) {
        self.id = id
        self.options = options
        self.store = store
        self.displayName = displayName
        self.protectedWindows = protectedWindows
        self.logger = logger
    }

    /// Opens the display and audio sources and starts recording. Throws, with nothing kept,
    /// when the screen cannot be captured; a missing audio server only adds a warning.
    func start() throws -> RecordingStarted {
        let options = self.options
        let screenReady = DispatchSemaphore(value: 0)
        // Capture waits for the writer to exist, so no frame is taken before the recording's origin.
        let begin = DispatchSemaphore(value: 0)
        let screenResult = Mutex<Result<(Int, Int), CaptureError>?>(nil)
        let queue = self.queue, stopFlag = self.stopFlag, displayName = self.displayName
        let protectedWindows = self.protectedWindows

        producers.enter()
        Thread.detachNewThread { [self] in
            defer { producers.leave() }
            let capture: ScreenCapture
            do throws(CaptureError) {
                capture = try ScreenCapture(displayName: displayName,
                                            options: .init(fps: options.fps, showCursor: options.showCursor,
                                                          protectedWindows: protectedWindows),
                                            counters: screenCounters)
                screenResult.withLock { $0 = .success(capture.frameSize) }
            } catch {
                screenResult.withLock { $0 = .failure(error) }
                screenReady.signal()
                return
            }
            screenReady.signal()
            begin.wait()
            do throws(CaptureError) {
                try capture.run(output: queue, stop: stopFlag)
            } catch {
                fail(error.description)
            }
        }
        screenReady.wait()
        let size: (Int, Int)
        switch screenResult.withLock({ $0 })! {
        case .failure(let error): throw error
        case .success(let frameSize): size = frameSize
        }

        var warnings: [String] = []
        var audioSources: [AudioSource] = []
        var audioCaptures: [AudioCapture] = []
        for source in [AudioSource.app, .microphone]
        where (source == .app && options.appAudio) || (source == .microphone && options.microphone) {
            do {
                audioCaptures.append(try AudioCapture(source: source))
                audioSources.append(source)
            } catch {
                warnings.append("\(source == .app ? "app audio" : "microphone") not recorded: \(error.description)")
            }
        }

        let path = store.moviePath(id: id)!
        let writer: MovieWriter
        do {
            writer = try MovieWriter(path: path.path, format: MovieFormat(
                width: size.0, height: size.1, fps: options.fps, preset: options.video.preset,
                bitRate: options.video.bitRate, crf: options.video.crf,
                keyframeInterval: options.video.keyframeInterval, audioSources: audioSources))
        } catch {
            stopFlag.raise()
            begin.signal()
            try? FileManager.default.removeItem(at: path)
            throw error
        }

        let origin = MediaTime(nanoseconds: MonotonicClock.nanoseconds())
        state.withLock {
            $0.origin = origin
            $0.width = size.0
            $0.height = size.1
        }
        store.save(info())
        begin.signal()

        for capture in audioCaptures {
            producers.enter()
            let box = UncheckedBox(capture)
            Thread.detachNewThread { [self] in
                defer { producers.leave() }
                do throws(CaptureError) {
                    try box.value.run(output: queue, stop: stopFlag)
                } catch {
                    // Losing audio mid-way is worth a warning, not the recording.
                    logger.warning("audio capture ended: \(error.description)", metadata: ["recording": "\(id)"])
                }
            }
        }
        let writerBox = UncheckedBox(writer)
        let recordedSources = audioSources
        Thread.detachNewThread { [self] in writeMovie(writerBox.value, audioSources: recordedSources, origin: origin) }
        producers.notify(queue: .global()) { queue.close() }

        if let duration = options.duration {
            DispatchQueue.global().asyncAfter(deadline: .now() + duration) { [self] in stop() }
        }
        for warning in warnings { logger.warning("\(warning)", metadata: ["recording": "\(id)"]) }
        // Time zero of the movie on the monotonic clock, to relate the movie to other clocks' events.
        logger.debug("recording origin", metadata: ["recording": "\(id)", "monotonicNs": "\(origin.nanoseconds)"])
        return RecordingStarted(id: id, width: size.0, height: size.1, warnings: warnings)
    }

    /// Ends the recording; what was captured so far is kept. Safe to call more than once.
    func stop() {
        state.withLock { state in
            if state.stopTime == nil { state.stopTime = MediaTime(nanoseconds: MonotonicClock.nanoseconds()) }
        }
        stopFlag.raise()
    }

    var isFinished: Bool { state.withLock { $0.summary != nil } }

    /// Blocks until the movie is closed.
    func waitUntilFinished() -> RecordingSummary {
        finished.wait()
        finished.signal()
        return state.withLock { $0.summary! }
    }

    func progress() -> RecordingProgress {
        state.withLock { state in
            RecordingProgress(
                elapsed: (MediaTime(nanoseconds: MonotonicClock.nanoseconds()) - state.origin).seconds,
                frames: state.writtenFrames, dropped: screenCounters.dropped, bytes: state.bytes)
        }
    }

    private func fail(_ message: String) {
        logger.error("\(message)", metadata: ["recording": "\(id)"])
        state.withLock { if $0.failure == nil { $0.failure = message } }
        stop()
    }

    private func writeMovie(_ writer: MovieWriter, audioSources: [AudioSource], origin: MediaTime) {
        var timelines: [AudioSource: AudioTimeline] = [:]
        for source in audioSources {
            timelines[source] = AudioTimeline(origin: origin, sampleRate: AudioCapture.sampleRate, channels: AudioCapture.channels)
        }
        var lastVideo: VideoSample?
        var lastSave = MonotonicClock.nanoseconds()
        var writeFailed = false

        while let sample = queue.pop() {
            if writeFailed { continue }
            do {
                switch sample {
                case .video(let frame):
                    guard frame.time >= origin else { continue }
                    try writer.append(frame, at: frame.time - origin)
                    lastVideo = frame
                case .audio(let buffer):
                    let samples = timelines[buffer.source]!.place(buffer)
                    if !samples.isEmpty { try writer.append(audio: samples, source: buffer.source) }
                }
            } catch {
                writeFailed = true
                fail(error.description)
                continue
            }
            let frames = writer.videoFrames, bytes = writer.bytesWritten
            state.withLock {
                $0.writtenFrames = frames
                $0.bytes = bytes
            }
            if MonotonicClock.nanoseconds() - lastSave > 1_000_000_000 {
                lastSave = MonotonicClock.nanoseconds()
                store.save(info())
            }
        }

        let stopTime = state.withLock { $0.stopTime } ?? MediaTime(nanoseconds: MonotonicClock.nanoseconds())
        if writeFailed {
            writer.abandon()
        } else {
            do {
                // Close both tracks at the moment the recording was stopped: the still screen
                // is shown until then, and audio that had not arrived yet is silence.
                let interval = MediaTime(nanoseconds: 1_000_000_000 / Int64(options.fps))
                if let lastVideo, stopTime - lastVideo.time >= interval + interval {
                    try writer.append(VideoSample(time: stopTime - interval, pixels: lastVideo.pixels, isRepeat: true),
                                      at: stopTime - interval - origin)
                }
                for source in audioSources {
                    let padding = timelines[source]!.pad(through: stopTime)
                    if !padding.isEmpty { try writer.append(audio: padding, source: source) }
                }
                try writer.finish()
            } catch {
                writer.abandon()
                fail(error.description)
            }
        }

        let frames = writer.videoFrames, bytes = store.fileSize(id: id)
        let summary = state.withLock { state in
            state.writtenFrames = frames
            state.bytes = bytes
            let summary = RecordingSummary(
                id: id, duration: max(0, (stopTime - origin).seconds), frames: frames,
                dropped: screenCounters.dropped, error: state.failure)
            state.summary = summary
            return summary
        }
        store.save(info())
        for (source, timeline) in timelines where timeline.insertedFrames + timeline.droppedFrames > 0 {
            // Silence inserted or audio dropped to keep sync: large numbers point at a capture problem.
            logger.info("audio timing corrections", metadata: [
                "recording": "\(id)", "source": "\(source.rawValue)",
                "insertedMs": "\(timeline.insertedFrames * 1000 / Int64(timeline.sampleRate))",
                "droppedMs": "\(timeline.droppedFrames * 1000 / Int64(timeline.sampleRate))",
            ])
        }
        logger.info("recording finished", metadata: [
            "recording": "\(id)", "frames": "\(summary.frames)", "dropped": "\(summary.dropped)",
            "duration": "\(summary.duration)", "error": "\(summary.error ?? "none")",
        ])
        finished.signal()
    }

    private func info() -> RecordingInfo {
        state.withLock { state in
            let now = MediaTime(nanoseconds: MonotonicClock.nanoseconds())
            let end = state.summary.map { _ in state.stopTime ?? now } ?? now
            let status: RecordingInfo.State = state.summary == nil ? .recording : (state.failure == nil ? .complete : .interrupted)
            return RecordingInfo(
                id: id, created: state.created, state: status, duration: max(0, (end - state.origin).seconds),
                frames: state.writtenFrames, dropped: screenCounters.dropped, width: state.width, height: state.height,
                bytes: state.bytes, error: state.failure)
        }
    }
}

/// Hands an object that is used by exactly one thread at a time to the thread that will own it.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
