import Foundation
import Logging
import ReplayCapture
import ReplayIPC
import ReplayMedia
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One live broadcast: capture → shared surfaces → the sandboxed upload extension.
///
/// Pictures are converted straight into memfd surfaces the extension mapped read-only at
/// the start, so no byte is copied after capture; a message names the surface. While the
/// extension holds every surface, new frames are dropped and counted: capture never waits
/// and memory never grows. The extension is watched all along: a crash, a hang (no answer
/// to the heartbeat), memory over 50 MB or a malformed message ends this broadcast with a
/// clear error, and nothing else.
final class BroadcastSession: Sendable {
    let id: String
    /// When it was asked for: lists show broadcasts oldest first, so the latest is last.
    let createdAt = MonotonicClock.nanoseconds()
    let request: BroadcastRequest
    /// The app that started it through the picker, if one did: it may pause, resume and stop it.
    let host: PeerIdentity?
    /// That app's connection, which hears the broadcast's updates.
    let hostChannel: MessageChannel?
    private let manifest: ExtensionManifest
    private let parts: SessionParts
    private let protectedWindows: ProtectedWindows
    private let logger: Logger
    private let state: Mutex<State>
    private let queue = BoundedQueue<SampleBuffer>(capacity: 2)
    private let stopFlag = StopFlag()
    private let finished = DispatchSemaphore(value: 0)
    /// Told of every change of state, service info, URL or error (the host app's connection).
    private let observers = Mutex<[@Sendable (BroadcastStatus) -> Void]>([])

    static let videoSurfaces = 4
    static let heartbeatTimeout: Int64 = 5_000_000_000

    private struct State {
        var status: BroadcastStatus
        var process: ExtensionProcess?
        var surfaces: [SharedSurface] = []
        /// Surfaces the extension holds, with how many of its messages name each.
        var lent: [Int: (storage: PixelStorage, count: Int)] = [:]
        var surfaceOfStorage: [ObjectIdentifier: Int] = [:]
        /// Audio waiting in the ring for the extension to copy it, oldest first.
        var audioInFlight: [(offset: Int, bytes: Int)] = []
        var audioWrite = 0
        var lastPong = MonotonicClock.nanoseconds()
        var ready = false
        var ending = false
        var peakMemory = 0
        /// Frames the extension's socket would not take in time.
        var unsentFrames = 0
        var counters: CaptureCounters?
    }

    init(id: String, request: BroadcastRequest, host: PeerIdentity?, hostChannel: MessageChannel? = nil, manifest: ExtensionManifest,
         parts: SessionParts, protectedWindows: ProtectedWindows, logger: Logger) {
        self.id = id
        self.request = request
        self.host = host
        self.hostChannel = hostChannel
        self.manifest = manifest
        self.parts = parts
        self.protectedWindows = protectedWindows
        self.logger = logger
        state = Mutex(State(status: BroadcastStatus(id: id, extensionID: request.extensionID, scope: request.scope, state: .starting)))
    }

    var status: BroadcastStatus {
        state.withLock { state in
            var status = state.status
            status.framesDropped = (state.counters?.dropped ?? 0) + state.unsentFrames
            status.extensionPeakMemory = state.peakMemory
            return status
        }
    }
    var peakMemory: Int { state.withLock { $0.peakMemory } }

    /// Opens the display, starts the extension and waits for it to be ready; throws with
    /// nothing left running when any of that fails.
    func start(hidden: [String], applicationInfo: [String: String]) throws {
        let filter: WindowFilter
        switch request.scope {
        case .screen: filter = .everything
        case .app:
            // Only the host app's own windows, as in-app capture: never the screen by default.
            guard let host else { throw ExtensionProcess.LaunchError(description: "only an app can broadcast its own windows") }
            filter = .onlyProcess(host.pid)
        }
        let capture = try parts.capture.makeScreenCapture(ScreenCaptureOptions(
            fps: min(request.fps, 30), showCursor: request.scope == .screen, filter: filter, protectedWindows: protectedWindows))
        state.withLock { $0.counters = capture.counters }
        let size = capture.frameSize
        let surfaceSize = max(PixelBuffer.byteCount(width: size.width, height: size.height), 1 << 20)
        var surfaces: [SharedSurface] = []
        for index in 0...Self.videoSurfaces {
            surfaces.append(try SharedSurface.create(name: "openreplaykit-broadcast-\(index)", size: surfaceSize))
        }
        let writable = manifest.setupFields.filter { $0.kind == .directory }.compactMap { request.setup[$0.key] }
        let process = try ExtensionProcess(manifest: manifest, hidden: hidden, writable: writable)
        do {
            let descriptors = try surfaces.map { try $0.readOnlyDescriptor() }
            defer { descriptors.forEach { close($0) } }
            try DescriptorPassing.send(socket: process.socket, bytes: BroadcastCodec.encode(.hello(.init(
                surfaceCount: UInt16(surfaces.count), surfaceSize: UInt64(surfaceSize)))), descriptors: descriptors)
        } catch {
            process.kill()
            throw error
        }
        // The pool must hold the only references to the storages: it lends one only while
        // nobody else refers to it. A local array kept alive until start() returns made every
        // frame captured meanwhile "in use" and dropped, so this is a function of its own.
        lendVideoSurfaces(surfaces, process: process, to: capture)
        Thread.detachNewThread { [self] in receiveFromExtension(process) }
        Thread.detachNewThread { [self] in watch(process) }

        // The extension must say it is ready before anything else happens.
        let deadline = MonotonicClock.nanoseconds() + 10_000_000_000
        while !state.withLock({ $0.ready || $0.ending }) && MonotonicClock.nanoseconds() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        guard state.withLock({ $0.ready && !$0.ending }) else {
            let why = state.withLock { $0.status.lastError } ?? "did not get ready within 10 seconds"
            end(failure: why)
            _ = waitUntilFinished()
            throw ExtensionProcess.LaunchError(description: "extension '\(manifest.id)' \(why)")
        }
        send(.started(setupInfo: request.setup))
        send(.annotated(applicationInfo: applicationInfo))
        // Not over an end that came meanwhile (a malformed message right after `ready`):
        // a failed broadcast stays failed, and its stop flag keeps capture from starting.
        state.withLock { state in if !state.ending { state.status.state = .live } }
        notifyObservers()

        let captureBox = UncheckedBox(capture)
        Thread.detachNewThread { [self] in
            do throws(CaptureError) {
                try captureBox.value.run(output: queue, stop: stopFlag)
            } catch {
                end(failure: error.description)
            }
            queue.close()
        }
        startAudio()
        Thread.detachNewThread { [self] in sendSamples() }
        logger.info("broadcast started", metadata: ["broadcast": "\(id)", "extension": "\(manifest.id)", "size": "\(size.width)x\(size.height)",
                                                    "scope": "\(request.scope.rawValue)"])
    }

    /// Video surfaces as the capture's fixed pool, each known by its index.
    private func lendVideoSurfaces(_ surfaces: [SharedSurface], process: ExtensionProcess, to capture: any ScreenCapturing) {
        let videoStorages = surfaces.prefix(Self.videoSurfaces).map { surface in
            PixelStorage(borrowing: surface.mutableBytes!) {}
        }
        state.withLock { state in
            state.process = process
            state.surfaces = surfaces
            for (index, storage) in videoStorages.enumerated() { state.surfaceOfStorage[ObjectIdentifier(storage)] = index }
        }
        capture.pool = PixelBufferPool(fixed: videoStorages)
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

    /// Blocks until the extension is gone and the status is final.
    func waitUntilFinished() -> BroadcastStatus {
        finished.wait()
        finished.signal()
        return status
    }

    private func setPaused(_ paused: Bool) {
        let changed = state.withLock { state -> Bool in
            guard state.status.state == (paused ? .live : .paused) else { return false }
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
        for source in sources {
            do {
                let capture = try parts.capture.makeAudioCapture(source)
                let box = UncheckedBox(capture)
                Thread.detachNewThread { [self] in
                    do throws(CaptureError) { try box.value.run(output: queue, stop: stopFlag) } catch {
                        logger.warning("broadcast audio ended: \(error.description)", metadata: ["broadcast": "\(id)"])
                    }
                }
            } catch {
                logger.warning("broadcast without \(source == .app ? "app audio" : "microphone"): \(error.description)",
                               metadata: ["broadcast": "\(id)"])
            }
        }
    }

    /// Hands samples to the extension as messages naming surfaces.
    private func sendSamples() {
        while let sample = queue.pop() {
            if state.withLock({ $0.status.state != .live }) { continue }
            switch sample {
            case .video(let frame): sendVideo(frame)
            case .audio(let buffer): sendAudio(buffer)
            }
        }
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
        let message = BroadcastMessage.video(.init(surface: UInt16(index), width: UInt32(pixels.width), height: UInt32(pixels.height),
                                                   planes: planes, time: frame.time.nanoseconds,
                                                   orientation: .init(rawValue: frame.orientation.rawValue) ?? .up))
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
        guard let socket = state.withLock({ $0.process?.socket }) else { return false }
        let bytes = BroadcastCodec.encode(message)
        guard (try? DescriptorPassing.send(socket: socket, bytes: bytes, descriptors: [])) != nil else { return false }
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
    private func receiveFromExtension(_ process: ExtensionProcess) {
        let limits = state.withLock { BroadcastCodec.Surfaces(count: UInt16($0.surfaces.count), size: UInt64($0.surfaces.first?.size ?? 0)) }
        while true {
            let bytes: [UInt8]
            do {
                let received = try DescriptorPassing.receive(socket: process.socket, maxBytes: BroadcastCodec.maxFramedMessage, maxDescriptors: 0)
                bytes = received.bytes
            } catch let error where error.errno != ECONNRESET {
                end(failure: "the extension sent something that is not a message (\(error)); the connection was closed")
                return
            } catch {
                bytes = []
            }
            guard !bytes.isEmpty else {
                // The extension closed its end: it exited or crashed.
                _ = process.process.wait(timeout: 2)
                end(failure: "the extension \(process.exitDescription ?? "closed its connection") before the broadcast ended")
                return
            }
            let message: BroadcastMessage
            do {
                message = try BroadcastCodec.decode(framed: bytes, surfaces: limits)
            } catch {
                end(failure: "the extension sent a malformed message (\(error)); the connection was closed")
                return
            }
            switch message {
            case .ready: state.withLock { $0.ready = true }
            case .pong: state.withLock { $0.lastPong = MonotonicClock.nanoseconds() }
            case .release(let surface): release(surface: Int(surface))
            case .finish(let error): end(failure: "the extension ended the broadcast: \(error)")
            case .serviceInfo(let info):
                state.withLock { $0.status.serviceInfo = info }
                notifyObservers()
            case .broadcastURL(let url):
                state.withLock { $0.status.broadcastURL = url }
                notifyObservers()
            default:
                end(failure: "the extension sent \(message), which only replayd may send; the connection was closed")
                return
            }
        }
    }

    /// Heartbeat and memory, checked every 50 ms until the extension is gone.
    private func watch(_ process: ExtensionProcess) {
        var sequence: UInt32 = 0
        var lastPing = Int64(0)
        while process.process.isRunning {
            let now = MonotonicClock.nanoseconds()
            let resident = process.residentBytes()
            let (lastPong, ready) = state.withLock { state in
                state.peakMemory = max(state.peakMemory, resident)
                return (state.lastPong, state.ready)
            }
            // The reason is recorded before the kill, so it is not taken for a crash.
            if resident > ExtensionProcess.memoryLimit {
                end(failure: "the extension used more than \(ExtensionProcess.memoryLimit >> 20) MB of memory (\(resident >> 20) MB) and was stopped")
                process.kill()
            } else if ready && now - lastPong > Self.heartbeatTimeout {
                end(failure: "the extension stopped responding (no heartbeat for \(Self.heartbeatTimeout / 1_000_000_000) s) and was stopped")
                process.kill()
            } else if ready && now - lastPing >= 1_000_000_000 {
                sequence &+= 1
                lastPing = now
                send(.ping(sequence))
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        // Gone without being asked to (a crash, most often): that is this broadcast's failure.
        if !state.withLock({ $0.ending }) {
            end(failure: "the extension \(process.exitDescription ?? "exited") before the broadcast ended")
        }
        let status = state.withLock { state in
            state.process = nil
            state.lent = [:]
            return state.status
        }
        notifyObservers()
        logger.info("broadcast ended", metadata: [
            "broadcast": "\(id)", "framesSent": "\(status.framesSent)", "dropped": "\(status.framesDropped)",
            "error": "\(status.lastError ?? "none")", "peakExtensionMB": "\(peakMemory >> 20)",
        ])
        finished.signal()
    }

    /// Ends the broadcast once: with `failure`, it failed; without, it finished. The
    /// extension gets `finished` and five seconds to exit (an upload extension sends what it
    /// has queued and closes its stream properly) before it is killed.
    private func end(failure: String?) {
        let process = state.withLock { state -> ExtensionProcess? in
            guard !state.ending else { return nil }
            state.ending = true
            state.status.state = failure == nil ? .finished : .failed
            state.status.lastError = failure
            return state.process
        }
        stopFlag.raise()
        guard let process else { return }
        if let failure { logger.error("broadcast failed: \(failure)", metadata: ["broadcast": "\(id)"]) }
        Thread.detachNewThread {
            if failure == nil { _ = (try? DescriptorPassing.send(socket: process.socket, bytes: BroadcastCodec.encode(.finished), descriptors: [])) }
            if process.process.wait(timeout: failure == nil ? 5 : 0.2) == nil { process.kill() }
        }
    }
}
