import FoundationEssentials
import Dispatch
package import Logging
import ReplayCapture
package import ReplayCaptureModel
import ReplayCodec
package import ReplayIPC
package import ReplayMedia
import ReplayProcessing
import ReplaySystem
import Synchronization

/// One recording: capture → queue → encode → mux → private store; or a clip buffer, whose
/// movie is only kept in memory (the last minutes, in a `ClipBuffer`) until a clip of it is
/// saved into the store.
///
/// The data path runs on threads of its own, because capture and encoding are blocking C:
/// one per source, feeding `inbox`, and one writer that drains it into the movie; size changes
/// travel through the same inbox, in order with the samples. What state the recording is in
/// is decided by its `SessionLifecycle` behind one lock; every transition asks it first.
/// Pauses go into the `MovieTimeline` under the same lock, where the writer places each
/// sample by its capture time and progress reads the elapsed time.
package final class RecordingSession: Sendable {
    package let id: String
    private let options: RecordingOptions
    package let destination: RecordingDestination
    private let store: any RecordingShelf
    private let parts: RecordingParts
    private let protectedWindows: ProtectedWindows
    private let logger: Logger
    // About a quarter of a second of video: enough to ride out a slow frame, small enough to bound memory.
    private let inbox = BoundedQueue<WriterInput>(capacity: 8)
    private let stopFlag = StopFlag()
    private let state = Mutex(State())
    private let completion = Completion<RecordingSummary>()

    /// What the writer thread receives, in order.
    package enum WriterInput: Sendable {
        case sample(SampleBuffer)
        case formatChanged(width: Int, height: Int)
    }

    private struct State {
        var lifecycle = SessionLifecycle()
        /// The movie's clock: its origin, and the spans left out while paused.
        var timeline = MovieTimeline(origin: .zero)
        var width = 0
        var height = 0
        var stopTime: MediaTime?
        var writtenFrames = 0
        var bytes: Int64 = 0
        var counters: CaptureCounters?
        var created = Date().timeIntervalSince1970
        /// A clip buffer's memory, once it started.
        var clips: ClipBuffer?
        /// A clip buffer's saves, newest last (the last `keptSaves`).
        var saves: [ClipSaveRecord] = []
    }

    private let filter: WindowFilter

    /// - Parameter filter: `.onlyProcess` for an app's clip buffer, which holds its own windows only.
    package init(id: String, options: RecordingOptions, destination: RecordingDestination = .store, filter: WindowFilter = .everything,
         store: any RecordingShelf, parts: RecordingParts, protectedWindows: ProtectedWindows, logger: Logger) {
        self.filter = filter
        self.id = id
        self.options = options
        self.destination = destination
        self.store = store
        self.parts = parts
        self.protectedWindows = protectedWindows
        self.logger = logger
    }

    package var phase: SessionPhase { state.withLock { $0.lifecycle.phase } }
    package var isFinished: Bool { completion.value != nil }

    /// Opens the screen, the audio and the movie, then starts recording. Throws, with
    /// nothing kept, when the screen or the movie cannot be opened; a missing audio server
    /// only adds a warning.
    package func start() throws(DaemonError) -> RecordingStarted {
        let screen: any ScreenCapturing
        do {
            // With a camera in the picture, a still screen is repeated at the full rate: the camera moves.
            let repeatInterval = options.camera == nil ? ScreenCaptureOptions.stillRepeat : MediaTime(seconds: 1 / Double(options.fps))
            screen = try parts.capture.makeScreenCapture(ScreenCaptureOptions(
                fps: options.fps, showCursor: options.showCursor, repeatInterval: repeatInterval, filter: filter,
                protectedWindows: protectedWindows, area: ScreenArea(options.area), excludedWindows: Set(options.excludedWindows ?? [])))
        } catch {
            throw failStart(DaemonError(code: .captureFailed, message: error.description))
        }
        let size = screen.frameSize

        var warnings: [String] = []
        var audioCaptures: [any AudioCapturing] = []
        for source in [AudioSource.app, .microphone]
        where (source == .app && options.appAudio) || (source == .microphone && options.microphone) {
            let selection = source == .app ? AudioSelection(device: options.audioDevice, application: options.audioApplication)
                : AudioSelection(device: options.microphoneDevice)
            do {
                audioCaptures.append(try parts.capture.makeAudioCapture(source, selection: selection))
            } catch {
                let what = source == .app ? "app audio" : "microphone"
                // A source the person named is part of what they asked for: without it, no recording.
                if options.requireNamedAudio == true, let named = selection.application ?? selection.device {
                    throw failStart(DaemonError(code: .captureFailed, message: "cannot record \(what) from '\(named)': \(error.description)"))
                }
                warnings.append("\(what) not recorded: \(error.description)")
            }
        }
        let audioSources = audioCaptures.map(\.source)
        var camera: (any CameraCapturing)?
        if let overlay = options.camera {
            do {
                camera = try parts.capture.makeCamera(device: overlay.device)
            } catch {
                warnings.append("camera not drawn in: \(error.description)")
            }
        }

        let format = MovieFormat(
            // Both capture backends convert with PixelConverter.
            width: size.width, height: size.height, picture: PixelConverter.format, fps: options.fps, preset: options.video.preset,
            bitRate: options.video.bitRate, crf: options.video.crf, keyframeInterval: options.video.keyframeInterval,
            codec: options.video.codec ?? .h264, quality: options.video.quality, audioSources: audioSources,
            frameRateMode: options.frameRateMode ?? .vfr)
        let sink: any MovieSink
        switch destination {
        case .store:
            let path = store.moviePath(id: id)!  // ids are made by the store, always valid
            do {
                sink = try parts.movies.makeMovieSink(path: path.path, format: format)
            } catch {
                try? FileManager.default.removeItem(at: path)
                throw failStart(DaemonError(code: .captureFailed, message: error.description))
            }
        case .clipBuffer(let length, let byteBudget, let spills):
            do throws(CodecError) {
                // A spilling buffer's file was handed over under the buffer's own id.
                let spill = spills ? store.moviePath(id: id)?.path : nil
                if spills && spill == nil { throw CodecError(.writeFailed, "replayd handed no file to keep the clip buffer in") }
                let clips = try ClipBuffer(format: format, length: length, byteBudget: byteBudget, spillPath: spill)
                state.withLock { $0.clips = clips }
                sink = clips
            } catch {
                throw failStart(DaemonError(code: .captureFailed, message: error.description))
            }
        }

        let origin = parts.clock.now()
        state.withLock {
            $0.timeline = MovieTimeline(origin: origin)
            $0.width = size.width
            $0.height = size.height
            $0.counters = screen.counters
        }
        if destination == .store { _ = store.save(info()) }

        let inbox = self.inbox, stopFlag = self.stopFlag
        let writerOutput = WriterOutput(inbox: inbox)
        let output: any CaptureOutput = if let camera, let overlay = options.camera {
            CameraCompositor(output: writerOutput, camera: camera, placement: PictureInPicture(overlay))
        } else {
            writerOutput
        }
        if let camera {
            // Not a producer of the movie: it only keeps its newest picture for the compositor.
            Threads.detach { [self] in
                do throws(CaptureError) {
                    try camera.run(stop: stopFlag)
                    logger.debug("camera stopped", metadata: ["recording": "\(id)", "pictures": "\(camera.pictureCount)"])
                } catch {
                    logger.warning("camera ended: \(error.description)", metadata: ["recording": "\(id)", "pictures": "\(camera.pictureCount)"])
                }
            }
        }
        let producers = DispatchGroup()
        let screenBox = UncheckedBox(screen)
        producers.enter()
        Threads.detach { [self] in
            defer { producers.leave() }
            do throws(CaptureError) {
                try screenBox.value.run(output: output, stop: stopFlag)
            } catch {
                fail(error.description)
            }
        }
        for capture in audioCaptures {
            let box = UncheckedBox(capture)
            producers.enter()
            Threads.detach { [self] in
                defer { producers.leave() }
                do throws(CaptureError) {
                    try box.value.run(output: output, stop: stopFlag)
                } catch {
                    // Losing audio mid-way is worth a warning, not the recording.
                    logger.warning("audio capture ended: \(error.description)", metadata: ["recording": "\(id)"])
                }
            }
        }
        let sinkBox = UncheckedBox(sink)
        Threads.detach { [self] in writeMovie(sinkBox.value, audioSources: audioSources, origin: origin) }
        producers.notify(queue: .global()) { inbox.close() }

        // A stop (or a failure) that came while starting winds the recording down now.
        if state.withLock({ $0.lifecycle.didStart() }) == .finishing { windDown() }
        if let duration = options.duration { stop(afterRecording: MediaTime(seconds: duration)) }
        for warning in warnings { logger.warning("\(warning)", metadata: ["recording": "\(id)"]) }
        // Time zero of the movie on the monotonic clock, to relate the movie to other clocks' events.
        logger.debug("recording origin", metadata: ["recording": "\(id)", "monotonicNs": "\(origin.nanoseconds)"])
        return RecordingStarted(id: id, width: size.width, height: size.height, warnings: warnings)
    }

    private func failStart(_ error: DaemonError) -> DaemonError {
        state.withLock { $0.lifecycle.didFailToStart(error.message) }
        completion.complete(RecordingSummary(id: id, duration: 0, frames: 0, dropped: 0, error: error.message))
        return error
    }

    /// Leaves out what is captured from now until `resume`.
    package func pause() throws(DaemonError) {
        let now = parts.clock.now()
        try state.withLock { state throws(DaemonError) in
            try state.lifecycle.pause()
            state.timeline.pause(at: now)
        }
    }

    package func resume() throws(DaemonError) {
        let now = parts.clock.now()
        try state.withLock { state throws(DaemonError) in
            try state.lifecycle.resume()
            state.timeline.resume(at: now)
        }
    }

    /// Ends the recording; what was captured so far is kept. Safe to call in any phase, more than once.
    package func stop() {
        let now = parts.clock.now()
        let outcome = state.withLock { state -> SessionLifecycle.StopOutcome in
            let outcome = state.lifecycle.stop()
            if outcome != .ignored, state.stopTime == nil { state.stopTime = now }
            return outcome
        }
        if outcome == .finish { windDown() }
    }

    /// Ends the recording for `why` (its summary says so); what was captured is kept.
    package func end(because why: String) { fail(why) }

    /// Stops once the movie holds `duration`: time spent paused does not count, so a
    /// recording paused for a while still records as long as it was asked to.
    private func stop(afterRecording duration: MediaTime) {
        let now = parts.clock.now()
        let recorded = state.withLock { $0.timeline.duration(stoppedAt: now) }
        guard recorded < duration else { return stop() }
        DispatchQueue.global().asyncAfter(deadline: .now() + (duration - recorded).seconds) { [weak self] in
            guard let self, !isFinished else { return }
            stop(afterRecording: duration)
        }
    }

    /// A clip buffer's last `duration` (nil: all it keeps) as a new recording `clipID` in the store,
    /// while buffering goes on. Throws for a session that is no clip buffer, or when nothing
    /// is buffered yet.
    package func saveClip(last duration: MediaTime?, trigger: ClipSaveRecord.Trigger, as clipID: String) throws(DaemonError) -> ClipSaved {
        guard let clips = state.withLock({ $0.clips }) else {
            throw DaemonError(code: .outOfOrder, message: "clip buffering has not started")
        }
        let path = store.moviePath(id: clipID)!  // ids are made by the store, always valid
        let saved: SavedClip
        do {
            saved = try clips.save(last: duration, to: path.path)
        } catch {
            try? FileManager.default.removeItem(at: path)
            throw DaemonError(code: .captureFailed, message: "cannot save the clip: \(error.description)")
        }
        let (width, height) = state.withLock { ($0.width, $0.height) }
        let info = RecordingInfo(id: clipID, created: Date().timeIntervalSince1970, state: .complete, duration: saved.duration.seconds,
                                 frames: saved.videoFrames, dropped: 0, width: width, height: height, bytes: saved.bytes, error: nil,
                                 codec: options.video.codec ?? .h264)
        _ = store.save(info)
        state.withLock { state in
            state.saves.append(ClipSaveRecord(id: clipID, duration: info.duration, saved: info.created, trigger: trigger))
            if state.saves.count > Self.keptSaves { state.saves.removeFirst(state.saves.count - Self.keptSaves) }
        }
        logger.info("clip saved", metadata: ["clipBuffer": "\(id)", "recording": "\(clipID)", "duration": "\(info.duration)"])
        return ClipSaved(id: clipID, duration: info.duration, asked: duration?.seconds, frames: saved.videoFrames, bytes: saved.bytes)
    }

    /// Saves a clip buffer lists in its status: a hotkey pressed all day lists its last hundred.
    package static let keptSaves = 100

    /// How much a clip buffer holds now, and what was saved from it.
    package func clipStatus() -> ClipStatus? {
        guard case .clipBuffer(let length, let byteBudget, let spills) = destination, let clips = state.withLock({ $0.clips }) else { return nil }
        let (phase, width, height, saves) = state.withLock { ($0.lifecycle.phase, $0.width, $0.height, $0.saves) }
        return ClipStatus(id: id, buffered: clips.bufferedDuration.seconds, length: length.seconds, bytes: clips.bytesWritten,
                          byteBudget: Int64(byteBudget), paused: phase == .paused, width: width, height: height, saves: saves,
                          onDisk: spills ? true : nil)
    }

    /// Runs `handler` with the summary once the movie is closed (at once if it is).
    package func onFinish(_ handler: @escaping @Sendable (RecordingSummary) -> Void) { completion.onComplete(handler) }

    /// Blocks until the movie is closed.
    package func waitUntilFinished() -> RecordingSummary { completion.wait() }

    package func progress() -> RecordingProgress {
        let now = parts.clock.now()
        return state.withLock { state in
            RecordingProgress(
                elapsed: state.timeline.duration(stoppedAt: now).seconds,
                frames: state.writtenFrames, dropped: state.counters?.dropped ?? 0, bytes: state.bytes)
        }
    }

    private func windDown() { stopFlag.raise() }

    private func fail(_ message: String) {
        let now = parts.clock.now()
        let first = state.withLock { state -> Bool in
            guard state.lifecycle.fail(message) else { return false }
            if state.stopTime == nil { state.stopTime = now }
            return true
        }
        guard first else { return }
        logger.error("\(message)", metadata: ["recording": "\(id)"])
        windDown()
    }

    private func writeMovie(_ sink: any MovieSink, audioSources: [AudioSource], origin: MediaTime) {
        var audioTimelines: [AudioSource: AudioTimeline] = [:]
        for source in audioSources {
            audioTimelines[source] = AudioTimeline(origin: origin, sampleRate: AudioCapture.sampleRate, channels: AudioCapture.channels)
        }
        let size = state.withLock { ($0.width, $0.height) }
        let fitter = PictureTransform()
        var lastVideo: (sample: VideoSample, movieTime: MediaTime)?
        // At a constant rate every picture goes onto the 1/fps grid, and the grid's empty slots get the last one again.
        var grid = options.frameRateMode == .cfr ? ConstantFrameRate<VideoSample>(fps: options.fps) : nil
        var lastSave = parts.clock.now()
        var writeFailed = false

        while let input = inbox.pop() {
            if writeFailed { continue }
            do throws(CodecError) {
                switch input {
                case .formatChanged(let width, let height):
                    logger.info("screen resized: fitted into the movie's size", metadata: [
                        "recording": "\(id)", "screen": "\(width)x\(height)", "movie": "\(size.0)x\(size.1)"])
                case .sample(.video(var frame)):
                    guard let time = movieTime(of: frame.time) else { continue }
                    // The movie keeps the size it started with: another screen size is letter-boxed into it.
                    frame.pixels = fitter.fit(frame.pixels, width: size.0, height: size.1)
                    let frames = grid?.place(frame, at: time).map { ($0.picture, $0.time) } ?? [(frame, time)]
                    for (picture, at) in frames { try sink.append(picture, at: at) }
                    lastVideo = (frame, time)
                case .sample(.audio(let buffer)):
                    guard let time = movieTime(of: buffer.time) else { continue }
                    var placed = buffer
                    placed.time = origin + time
                    let samples = audioTimelines[buffer.source]?.place(placed) ?? []
                    if !samples.isEmpty { try sink.append(audio: samples, source: buffer.source) }
                }
            } catch {
                writeFailed = true
                fail(error.description)
                continue
            }
            let frames = sink.videoFrames, bytes = sink.bytesWritten
            state.withLock {
                $0.writtenFrames = frames
                $0.bytes = bytes
            }
            let now = parts.clock.now()
            if destination == .store, now - lastSave > MediaTime(nanoseconds: 1_000_000_000) {
                lastSave = now
                _ = store.save(info())
            }
        }

        let now = parts.clock.now()
        let duration = state.withLock { $0.timeline.duration(stoppedAt: $0.stopTime ?? now) }
        if writeFailed {
            sink.abandon()
        } else {
            do throws(CodecError) {
                // Close both tracks at the moment the recording was stopped: the still screen
                // is shown until then, and audio that had not arrived yet is silence.
                let interval = MediaTime(nanoseconds: 1_000_000_000 / Int64(options.fps))
                if let frames = grid?.finish(at: duration) {
                    for frame in frames { try sink.append(frame.picture, at: frame.time) }
                } else if let lastVideo, duration - lastVideo.movieTime >= interval + interval {
                    let end = duration - interval
                    try sink.append(VideoSample(time: lastVideo.sample.time + (end - lastVideo.movieTime),
                                                pixels: lastVideo.sample.pixels, isRepeat: true), at: end)
                }
                for source in audioSources {
                    let padding = audioTimelines[source]?.pad(through: origin + duration) ?? []
                    if !padding.isEmpty { try sink.append(audio: padding, source: source) }
                }
                try sink.finish()
            } catch {
                sink.abandon()
                fail(error.description)
            }
        }

        let frames = sink.videoFrames, bytes = destination == .store ? store.fileSize(id: id) : sink.bytesWritten
        let summary = state.withLock { state in
            state.writtenFrames = frames
            state.bytes = bytes
            state.lifecycle.didFinish()
            return RecordingSummary(id: id, duration: max(0, duration.seconds), frames: frames,
                                    dropped: state.counters?.dropped ?? 0, error: state.lifecycle.failure)
        }
        if destination == .store {
            // A movie without a single picture is no recording: the store never lists an empty one.
            if frames == 0 {
                store.delete(id: id)
                logger.info("nothing was recorded: the empty movie is not kept", metadata: ["recording": "\(id)"])
            } else {
                _ = store.save(info(finalDuration: duration))
            }
        }
        if let grid, grid.delayed + grid.dropped > 0 {
            // Pictures that came faster than the frame rate: many point at an uneven capture.
            logger.info("constant frame rate corrections", metadata: [
                "recording": "\(id)", "movedToNextSlot": "\(grid.delayed)", "dropped": "\(grid.dropped)"])
        }
        for (source, timeline) in audioTimelines where timeline.insertedFrames + timeline.droppedFrames > 0 {
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
        completion.complete(summary)
    }

    /// Where a sample captured at `time` goes in the movie; nil before the start or while paused.
    private func movieTime(of time: MediaTime) -> MediaTime? { state.withLock { $0.timeline.movieTime(of: time) } }

    private func info(finalDuration: MediaTime? = nil) -> RecordingInfo {
        let now = parts.clock.now()
        return state.withLock { state in
            let status: RecordingInfo.State = switch state.lifecycle.phase {
            case .finished: .complete
            case .failed: .interrupted
            default: .recording
            }
            let duration = finalDuration ?? state.timeline.duration(stoppedAt: now)
            return RecordingInfo(
                id: id, created: state.created, state: status, duration: max(0, duration.seconds),
                frames: state.writtenFrames, dropped: state.counters?.dropped ?? 0, width: state.width, height: state.height,
                bytes: state.bytes, error: state.lifecycle.failure, codec: options.video.codec ?? .h264)
        }
    }
}

/// The writer's inbox as the sources' output: pictures are offered (a full inbox drops
/// them), audio and size changes are always queued.
struct WriterOutput: CaptureOutput {
    let inbox: BoundedQueue<RecordingSession.WriterInput>
    func offer(_ frame: VideoSample) -> Bool { inbox.offer(.sample(.video(frame))) }
    func append(_ audio: AudioBuffer) { inbox.append(.sample(.audio(audio))) }
    func formatChanged(width: Int, height: Int) { inbox.append(.formatChanged(width: width, height: height)) }
}

/// In one process (the capture process's own, or a unit test's) the session answers at once.
extension RecordingSession: RecordingControl {
    package func start(then started: @escaping @Sendable (Result<RecordingStarted, DaemonError>) -> Void) {
        started(Result { () throws(DaemonError) in try start() })
    }

    package func setPaused(_ paused: Bool, then done: @escaping @Sendable (DaemonError?) -> Void) {
        do throws(DaemonError) {
            if paused { try pause() } else { try resume() }
            done(nil)
        } catch {
            done(error)
        }
    }

    package func saveClip(last duration: MediaTime?, trigger: ClipSaveRecord.Trigger, as clipID: String,
                          then saved: @escaping @Sendable (Result<ClipSaved, DaemonError>) -> Void) {
        saved(Result { () throws(DaemonError) in try saveClip(last: duration, trigger: trigger, as: clipID) })
    }
}
