import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
package import Logging
package import ReplayCapture
@_spi(OpenReplayKitInternal) package import ReplayIPC
@_spi(OpenReplayKitInternal) package import ReplayMedia
@_spi(OpenReplayKitInternal) import ReplayProcessing
import ReplaySystem
import Synchronization

/// A broadcast's capture: the screen (or an app's windows) and its sound, straight into the
/// shared surfaces the upload extension maps read-only. Each sample comes out as the extension
/// message that names it. It runs in a capture process, whose messages replayd checks and
/// forwards (or, in unit tests, in the test's own process).
///
/// Pictures are converted into a fixed pool of video surfaces, so no byte is copied after
/// capture; sound goes as ReplayKit's steady 1024-frame periods into a ring in the last
/// surface. A surface comes back when the extension releases it or its sample is not sent;
/// while every video surface is out, new pictures are dropped and counted: capture never
/// waits and memory never grows. The count rides on the next picture, and is also said on
/// its own (`dropped`) when no picture goes out to carry it.
package final class BroadcastCapture: Sendable {
    private let options: BroadcastCaptureOptions
    private let backend: any CaptureBackend
    private let protectedWindows: ProtectedWindows
    private let logger: Logger
    private let queue = BoundedQueue<Outgoing>(capacity: 2)
    private let stopFlag = StopFlag()
    /// The capture and sending threads; surfaces are unmapped only once both are done.
    private let pipeline = DispatchGroup()
    private let state = Mutex(State())

    private struct State {
        var capture: UncheckedBox<any ScreenCapturing>?
        var surfaces: [SharedSurface] = []
        /// Surfaces the extension holds, with how many of its messages name each.
        var lent: [Int: (storage: PixelStorage, count: Int)] = [:]
        var surfaceOfStorage: [ObjectIdentifier: Int] = [:]
        /// Audio waiting in the ring for the extension to copy it, oldest first.
        var audioInFlight: [(offset: Int, bytes: Int)] = []
        var audioWrite = 0
        var counters: CaptureCounters?
    }

    package init(options: BroadcastCaptureOptions, backend: any CaptureBackend, protectedWindows: ProtectedWindows, logger: Logger) {
        self.options = options
        self.backend = backend
        self.protectedWindows = protectedWindows
        self.logger = logger
    }

    /// Frames capture dropped so far (every surface was out, or it fell behind).
    package var dropped: Int { state.withLock { $0.counters?.dropped ?? 0 } }

    /// Shared surfaces still mapped (none once `whenDone` has run).
    package var surfacesHeld: Int { state.withLock { $0.surfaces.count } }

    /// Opens the display and makes the surfaces; throws with nothing left open when either fails.
    package func open() throws(DaemonError) -> BroadcastCaptureOpened {
        let filter: WindowFilter = options.onlyProcess.map(WindowFilter.onlyProcess) ?? .everything
        let capture: any ScreenCapturing
        var surfaces: [SharedSurface] = []
        var descriptors: [Int32] = []
        do {
            capture = try backend.makeScreenCapture(ScreenCaptureOptions(
                fps: options.fps, showCursor: options.showCursor, filter: filter, protectedWindows: protectedWindows))
            let size = capture.frameSize
            let surfaceSize = max(PixelBuffer.byteCount(width: size.width, height: size.height), 1 << 20)
            for index in 0...BroadcastCaptureOpened.videoSurfaces {
                surfaces.append(try SharedSurface.create(name: "openreplaykit-broadcast-\(index)", size: surfaceSize))
            }
            for surface in surfaces { descriptors.append(try surface.readOnlyDescriptor()) }
        } catch {
            descriptors.forEach { close($0) }
            throw DaemonError(code: .captureFailed, message: "\(error)")
        }
        let size = capture.frameSize
        lendVideoSurfaces(surfaces, to: capture)
        return BroadcastCaptureOpened(width: size.width, height: size.height, surfaceSize: surfaces[0].size, descriptors: descriptors)
    }

    /// The video surfaces as the capture's fixed pool, each known by its index. The pool must
    /// hold the only references to the storages: it lends one only while nobody else refers to
    /// it (a local array kept alive meanwhile made every frame "in use" and dropped it).
    private func lendVideoSurfaces(_ surfaces: [SharedSurface], to capture: any ScreenCapturing) {
        let videoStorages = surfaces.prefix(BroadcastCaptureOpened.videoSurfaces).map { surface in
            PixelStorage(borrowing: surface.mutableBytes!) {}  // created writable above
        }
        state.withLock { state in
            state.capture = UncheckedBox(capture)
            state.counters = capture.counters
            state.surfaces = surfaces
            for (index, storage) in videoStorages.enumerated() { state.surfaceOfStorage[ObjectIdentifier(storage)] = index }
        }
        capture.pool = PixelBufferPool(fixed: videoStorages, size: capture.frameSize)
        // Queued whatever the count, and coalesced by the sender: a drop is said even while the
        // extension holds every surface, so no picture goes out to carry it.
        capture.counters.whenDropped { [queue] in queue.append(.dropsCounted) }
    }

    /// Starts capturing. `deliver` gets each sample's message and says whether it was sent:
    /// one that was not (paused, or the extension would not take it) comes back at once.
    /// `ended` is called once, when the picture capture ends: with why, if it failed.
    /// Sound is laid on a grid from `audioOrigin`.
    package func run(audioOrigin: MediaTime, deliver: @escaping @Sendable (BroadcastMessage) -> Bool,
                     ended: @escaping @Sendable (String?) -> Void) {
        guard let (captureBox, pool) = state.withLock({ state in state.capture.map { ($0, $0.value.pool) } }) else {
            return ended("the broadcast's capture was not opened")
        }
        let size = captureBox.value.frameSize
        let output = BroadcastOutput(queue: queue, logger: logger,
                                     video: BroadcastOutput.VideoSurfaces(pool: pool, width: size.width, height: size.height))
        let queue = self.queue, stopFlag = self.stopFlag
        pipeline.enter()
        Threads.detach { [self] in
            defer { pipeline.leave() }
            var failure: String?
            do throws(CaptureError) {
                try captureBox.value.run(output: output, stop: stopFlag)
            } catch {
                failure = error.description
            }
            queue.close()
            ended(failure)
        }
        startAudio()
        pipeline.enter()
        Threads.detach { [self] in
            defer { pipeline.leave() }
            sendSamples(audioOrigin: audioOrigin, deliver: deliver)
        }
    }

    /// Ends capture; `whenDone` hears when nothing writes into the surfaces any more.
    package func stop() {
        stopFlag.raise()
        queue.close()
    }

    /// Runs `handler` once the capture and sending threads are done (at once if they never
    /// started), and unmaps the surfaces first.
    package func whenDone(_ handler: @escaping @Sendable () -> Void) {
        pipeline.notify(queue: .global()) { [self] in
            state.withLock { state in
                state.surfaces = []
                state.lent = [:]
                state.surfaceOfStorage = [:]
                state.audioInFlight = []
                state.capture = nil
            }
            handler()
        }
    }

    private func startAudio() {
        let output = BroadcastOutput(queue: queue, logger: logger, video: nil)
        for source in options.audio {
            do {
                let capture = try backend.makeAudioCapture(source)
                let box = UncheckedBox(capture)
                Threads.detach { [self] in
                    do throws(CaptureError) { try box.value.run(output: output, stop: stopFlag) } catch {
                        logger.warning("broadcast audio ended: \(error.description)")
                    }
                }
            } catch {
                logger.warning("broadcast without \(source == .app ? "app audio" : "microphone"): \(error.description)")
            }
        }
    }

    /// Hands samples on as messages naming surfaces; audio as ReplayKit's steady 1024-frame
    /// periods, whatever rhythm and clock each source keeps; drops no picture has told of.
    private func sendSamples(audioOrigin: MediaTime, deliver: @Sendable (BroadcastMessage) -> Bool) {
        var audioTracks: [AudioSource: SteadyAudioTrack] = [:]
        var dropsTold = 0
        while let next = queue.pop() {
            switch next {
            case .dropsCounted:
                let total = dropped
                guard total > dropsTold else { continue }
                dropsTold = total
                _ = deliver(.dropped(total: UInt32(clamping: total)))
            case .sample(.video(let frame)):
                guard let message = lend(frame), case .video(let picture) = message else { continue }
                if deliver(message) {
                    dropsTold = max(dropsTold, Int(picture.additions?.framesDropped ?? 0))
                } else {
                    release(surface: Int(picture.surface))
                }
            case .sample(.audio(let buffer)):
                // Appended in place: a copy taken out of the table would copy its pending samples.
                let periods = audioTracks[buffer.source, default: SteadyAudioTrack(origin: audioOrigin)].append(buffer)
                for period in periods {
                    guard let message = write(period) else { continue }
                    if !deliver(message), case .audio(let sound) = message { releaseAudio(offset: Int(sound.offset)) }
                }
            }
        }
        for (source, track) in audioTracks {
            let (inserted, dropped) = track.corrections
            logger.debug("broadcast audio kept on the clock", metadata: [
                "source": "\(source)", "silence inserted": "\(inserted) frames", "samples dropped": "\(dropped) frames",
            ])
        }
    }

    /// The message naming the picture's surface, which is lent until released.
    private func lend(_ frame: VideoSample) -> BroadcastMessage? {
        let pixels = frame.pixels
        let lent = state.withLock { state -> (index: Int, dropped: Int)? in
            guard let index = state.surfaceOfStorage[ObjectIdentifier(pixels.storage)] else { return nil }
            state.lent[index] = (pixels.storage, (state.lent[index]?.count ?? 0) + 1)
            return (index, state.counters?.dropped ?? 0)
        }
        guard let (index, dropped) = lent else { return nil }
        let planes = (0..<3).map { plane in
            BroadcastMessage.VideoFrame.Plane(offset: UInt64(pixels.offset(ofPlane: plane)), stride: UInt32(pixels.stride(ofPlane: plane)),
                                              rows: UInt32(pixels.height(ofPlane: plane)))
        }
        return .video(.init(surface: UInt16(index), picture: pixels.format, width: UInt32(pixels.width), height: UInt32(pixels.height),
                            planes: planes, time: frame.time.nanoseconds, orientation: .init(frame.orientation),
                            additions: .init(isRepeat: frame.isRepeat, framesDropped: UInt32(clamping: dropped))))
    }

    /// Audio goes through a ring in the last surface; the extension copies each period out
    /// and releases it. When the ring is full the period is dropped.
    private func write(_ buffer: AudioBuffer) -> BroadcastMessage? {
        let bytes = buffer.samples.count * 4
        return state.withLock { state in
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
    }

    /// The extension is done with `index`: a video surface goes back to the pool once no sent
    /// message names it; the ring's oldest period is copied out.
    package func release(surface index: Int) {
        state.withLock { state in
            if index == state.surfaces.count - 1 {
                if !state.audioInFlight.isEmpty { state.audioInFlight.removeFirst() }
                return
            }
            guard let entry = state.lent[index] else { return }
            state.lent[index] = entry.count > 1 ? (entry.storage, entry.count - 1) : nil
        }
    }

    /// The period at `offset` was never sent: its place in the ring is free again.
    package func releaseAudio(offset: Int) {
        state.withLock { state in
            if let at = state.audioInFlight.lastIndex(where: { $0.offset == offset }) { state.audioInFlight.remove(at: at) }
        }
    }
}

/// What the sending thread is handed: a sample, or word that capture counted a drop.
private enum Outgoing: Sendable {
    case sample(SampleBuffer)
    case dropsCounted
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

    let queue: BoundedQueue<Outgoing>
    let logger: Logger
    /// Nil for the audio sources' output.
    var video: VideoSurfaces?

    func offer(_ frame: VideoSample) -> Bool {
        guard let video, frame.pixels.width != video.width || frame.pixels.height != video.height else {
            return queue.offer(.sample(.video(frame)))
        }
        // All surfaces with the extension: the frame is dropped, and counted, as any other.
        guard let surface = video.pool.take(width: video.width, height: video.height, format: frame.pixels.format) else { return false }
        PictureTransform.fit(frame.pixels, into: surface)
        var fitted = frame
        fitted.pixels = surface
        return queue.offer(.sample(.video(fitted)))
    }

    func append(_ audio: AudioBuffer) { queue.append(.sample(.audio(audio))) }

    func formatChanged(width: Int, height: Int) {
        guard let video else { return }
        logger.info("content resized: fitted into the broadcast's size", metadata: [
            "content": "\(width)x\(height)", "broadcastSize": "\(video.width)x\(video.height)"])
    }
}
