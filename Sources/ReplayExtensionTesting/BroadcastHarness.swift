@_spi(OpenReplayKitInternal) public import ReplayExtensionKit
@_spi(OpenReplayKitInternal) public import ReplayMedia
import Foundation
@_spi(OpenReplayKitInternal) import ReplayIPC
import ReplaySystem
import Synchronization

/// Drives a `BroadcastSampleHandler` without a daemon, so an extension author can test
/// their handler offline: feed it a lifecycle and synthetic samples, then look at what it
/// told the host (service info, broadcast URL, an error that ended the broadcast).
///
/// Time is the harness's own: `now` moves only when the test says (`advance(by:)`,
/// `hang(for:)`), and the handler's ticks (`requestTicks(every:)`) come on it, so time-based
/// work is tested without waiting. What replayd does to a misbehaving extension is simulated
/// too: dropped frames (`dropFrames`), a hang (`hang(for:)`) and the memory limit
/// (`useMemory`), with replayd's own words in `failure`.
public final class BroadcastHarness: Sendable {
    private final class Recorder: BroadcastHost {
        let state = Mutex((finishError: String?.none, serviceInfo: [String: String](), broadcastURL: String?.none))
        func send(_ message: BroadcastMessage) {
            state.withLock { state in
                switch message {
                case .finish(let error): state.finishError = error
                case .serviceInfo(let info): state.serviceInfo = info
                case .broadcastURL(let url): state.broadcastURL = url
                default: break
                }
            }
        }
    }

    private let recorder = Recorder()
    private let handler: UncheckedHandler
    private let extensionID: String

    /// What the harness keeps between calls: its clock, the ticks, drops, and whether replayd
    /// would have stopped the extension.
    private struct Clockwork {
        var now: MediaTime
        var started = false
        var finished = false
        var ticks = TickClock()
        var framesDropped = 0
        var drops = DropCounter()
        var failure: String?
    }

    private let clockwork: Mutex<Clockwork>

    /// Holds the handler; the harness calls it from the caller's thread only.
    private struct UncheckedHandler: @unchecked Sendable {
        let value: BroadcastSampleHandler
    }

    /// Connects `handler` to the harness: what it reports lands in `finishError`,
    /// `serviceInfo` and `broadcastURL`. Call everything from one thread, as replayd's kit does.
    /// The harness's clock starts at `now`; `extensionID` is the manifest id replayd's
    /// messages would name.
    public init(_ handler: BroadcastSampleHandler, now: MediaTime = .zero, extensionID: String = "test") {
        self.handler = UncheckedHandler(value: handler)
        self.extensionID = extensionID
        clockwork = Mutex(Clockwork(now: now))
        handler.host = recorder
    }

    // As in a real broadcast, once the handler has called `finishBroadcast(error:)` it hears
    // nothing more but `broadcastFinished`: these calls are then ignored.

    /// `broadcastStarted` with the person's setup values (as `--setup KEY=VALUE` gives them).
    /// Ticks the handler asks for come from here on.
    public func start(setupInfo: [String: String] = [:]) {
        ifLive { $0.broadcastStarted(setupInfo: setupInfo) }
        clockwork.withLock { $0.started = true }
        refreshTicks()
    }
    /// `broadcastAnnotated` with the app's facts (`executable`, `name`).
    public func annotate(_ applicationInfo: [String: String]) { ifLive { $0.broadcastAnnotated(applicationInfo: applicationInfo) } }
    /// `broadcastPaused`, as when the person pauses.
    public func pause() { ifLive { $0.broadcastPaused() } }
    /// `broadcastResumed`, as when the person resumes.
    public func resume() { ifLive { $0.broadcastResumed() } }
    /// `broadcastFinished`, which replayd sends after a stop and after the handler's own
    /// `finishBroadcast(error:)`; not after a `failure` (replayd kills such an extension).
    public func finish() {
        guard clockwork.withLock({ $0.failure == nil && !$0.finished }) else { return }
        clockwork.withLock { $0.finished = true }
        handler.value.broadcastFinished()
    }

    private func ifLive(_ call: (BroadcastSampleHandler) -> Void) {
        guard finishError == nil, clockwork.withLock({ $0.failure == nil && !$0.finished }) else { return }
        call(handler.value)
        refreshTicks()
    }

    // MARK: Time, ticks and what replayd does to a misbehaving extension

    /// The harness's clock (`CLOCK_MONOTONIC` live): it moves only with `advance(by:)` and `hang(for:)`.
    public var now: MediaTime { clockwork.withLock { $0.now } }

    /// Moves the clock on by `duration`, handing the handler every tick that falls due on the
    /// way, at the time it was due (as a handler that returns promptly gets them live).
    public func advance(by duration: Duration) {
        let end = clockwork.withLock { $0.now } + MediaTime(duration)
        while true {
            let stopped = finishError != nil
            let due = clockwork.withLock { work -> MediaTime? in
                guard work.started, !stopped, work.failure == nil, !work.finished,
                      let next = work.ticks.next, next <= end.nanoseconds else { return nil }
                work.now = MediaTime(nanoseconds: max(next, work.now.nanoseconds))
                return work.now
            }
            guard let due else { break }
            tick(at: due)
        }
        clockwork.withLock { $0.now = max($0.now, end) }
    }

    /// The handler's thread is stuck for `duration` (a blocking upload, a deadlock), as
    /// replayd sees it: no heartbeat is answered meanwhile. From 5 s on (replayd's heartbeat
    /// timeout) the extension is taken as hung and killed: `failure` says so, in replayd's
    /// words, and the handler hears nothing more, not even `broadcastFinished`. A shorter
    /// hang costs the ticks that fell due in it but one, which comes as it ends.
    public func hang(for duration: Duration) {
        let timeout = MediaTime(nanoseconds: Int64(BroadcastLimits.heartbeatTimeout * 1e9))
        let late = clockwork.withLock { work -> MediaTime? in
            guard work.failure == nil, !work.finished else { return nil }
            if MediaTime(duration) >= timeout {
                work.now = work.now + timeout
                work.failure = BroadcastLimits.hangFailure()
                return nil
            }
            work.now = work.now + MediaTime(duration)
            guard work.started, let next = work.ticks.next, next <= work.now.nanoseconds else { return nil }
            return work.now
        }
        if let late { tick(at: late) }
    }

    /// The extension's sandbox now holds `bytes` of memory it cannot give back, as replayd's
    /// watchdog would count them (ReplayKit's limit: 50 MiB, `BroadcastLimits.memory`). Over
    /// the limit it is killed: `failure` says so, in replayd's words, and the handler hears
    /// nothing more.
    public func useMemory(_ bytes: Int) {
        clockwork.withLock { work in
            guard work.failure == nil, !work.finished, bytes > BroadcastLimits.memory else { return }
            work.failure = BroadcastLimits.memoryFailure(extensionID: extensionID, bytes: bytes)
        }
    }

    /// replayd drops `count` frames (every surface was out, capture fell behind): the handler
    /// hears it at once, through `broadcastDroppedFrames`, as live (protocol 1.2's `dropped`
    /// message), even while it holds every picture it was given.
    public func dropFrames(_ count: Int) {
        let total = clockwork.withLock { work in
            work.framesDropped += max(0, count)
            return work.framesDropped
        }
        ifLive { handler in
            if let news = clockwork.withLock({ $0.drops.update(total: total) }) {
                handler.broadcastDroppedFrames(news.count, total: news.total)
            }
        }
    }

    /// Why replayd would have stopped the extension (a hang, the memory limit), in its
    /// words; nil while it would not. Once set, the handler hears nothing more.
    public var failure: String? { clockwork.withLock { $0.failure } }

    private func tick(at time: MediaTime) {
        guard finishError == nil, clockwork.withLock({ $0.failure == nil && !$0.finished }) else { return }
        handler.value.broadcastTick(at: time)
        // Whatever the handler did in its tick, the clock's next tick lies after this one.
        let request = handler.value.tickRequest
        clockwork.withLock { work in
            work.ticks.ticked(at: time.nanoseconds)
            work.ticks.refresh(request, now: time.nanoseconds)
        }
    }

    /// Takes up a tick request the handler made in the call that just returned.
    private func refreshTicks() {
        let request = handler.value.tickRequest
        clockwork.withLock { $0.ticks.refresh(request, now: $0.now.nanoseconds) }
    }

    /// A picture of one flat colour (Y, U, V, in `format`'s coding), timed at `time`, handed
    /// over as replayd hands it: in a sealed shared surface mapped read-only (a handler that
    /// writes into it crashes here as it would live), described by a `video` message that went
    /// through the wire codec, built into a `PixelBuffer` by the kit's own code.
    /// `isRepeat`: the picture repeats the previous one (a still screen), as `VideoSample.isRepeat`
    /// says live. Its message carries the drops so far, as live.
    public func sendVideo(width: Int = 1280, height: Int = 720, time: MediaTime, luma: UInt8 = 128, u: UInt8 = 128, v: UInt8 = 128,
                          format: PictureFormat = .bt601VideoRange, orientation: Orientation = .up, isRepeat: Bool = false) {
        let dropped = UInt32(clamping: clockwork.withLock { $0.framesDropped })
        let (sample, frame) = Self.picture(width: width, height: height, time: time, luma: luma, u: u, v: v, format: format,
                                           orientation: orientation, additions: .init(isRepeat: isRepeat, framesDropped: dropped))
        ifLive { handler in
            if let news = clockwork.withLock({ $0.drops.update(with: frame) }) {
                handler.broadcastDroppedFrames(news.count, total: news.total)
            }
            handler.processSampleBuffer(.video(sample))
        }
    }

    /// The sample `sendVideo` hands over, and the message that described it; its memory is
    /// unmapped when the last reference is gone.
    private static func picture(width: Int, height: Int, time: MediaTime, luma: UInt8, u: UInt8, v: UInt8, format: PictureFormat,
                                orientation: Orientation, additions: BroadcastMessage.VideoFrame.Additions)
        -> (VideoSample, BroadcastMessage.VideoFrame) {
        let size = PixelBuffer.byteCount(width: width, height: height)
        do {
            let surface = try SharedSurface.create(name: "harness-picture", size: size)
            let bytes = surface.mutableBytes!  // created writable
            let lumaCount = width * height, chromaCount = lumaCount / 4
            bytes[0..<lumaCount].initializeMemory(as: UInt8.self, repeating: luma)
            let uPlane = UnsafeMutableRawBufferPointer(rebasing: bytes[lumaCount..<lumaCount + chromaCount])
            let vPlane = UnsafeMutableRawBufferPointer(rebasing: bytes[lumaCount + chromaCount..<size])
            uPlane.initializeMemory(as: UInt8.self, repeating: u)
            vPlane.initializeMemory(as: UInt8.self, repeating: v)
            let readOnly = try SharedSurface.mapReadOnly(descriptor: try surface.readOnlyDescriptor())
            let planes = [(0, width, height), (lumaCount, width / 2, height / 2), (lumaCount + chromaCount, width / 2, height / 2)]
                .map { BroadcastMessage.VideoFrame.Plane(offset: UInt64($0.0), stride: UInt32($0.1), rows: UInt32($0.2)) }
            let sent = BroadcastMessage.video(.init(surface: 0, picture: format, width: UInt32(width), height: UInt32(height),
                                                    planes: planes, time: time.nanoseconds, orientation: .init(orientation),
                                                    additions: additions))
            guard case .video(let frame) = try BroadcastCodec.decode(framed: BroadcastCodec.encode(sent),
                                                                     surfaces: .init(count: 1, size: UInt64(size))) else {
                preconditionFailure("a video message decoded as another")
            }
            // Only the read-only mapping stays (the writable one goes with `surface` on return),
            // until the picture's last reference is gone, as a surface lent by replayd.
            return (try ReceivedPicture.sample(of: frame, in: readOnly.bytes) { _ = readOnly }, frame)
        } catch {
            preconditionFailure("the harness cannot make a \(width)x\(height) picture: \(error)")
        }
    }

    /// A sine tone of `frequency` Hz at amplitude 0.25, `frames` frames of 48 kHz stereo starting
    /// at `time` (its phase follows `time`, so periods sent back to back join without a click).
    public func sendAudio(_ source: AudioSource, frames: Int = 1024, frequency: Double = 440, time: MediaTime) {
        guard finishError == nil, clockwork.withLock({ $0.failure == nil && !$0.finished }) else { return }
        let rate = 48_000.0
        let start = Double(time.nanoseconds) / 1e9
        var samples: [Float] = []
        samples.reserveCapacity(frames * 2)
        for frame in 0..<frames {
            let value = Float(0.25 * sin(2 * Double.pi * frequency * (start + Double(frame) / rate)))
            samples += [value, value]
        }
        let buffer = AudioBuffer(source: source, time: time, sampleRate: 48_000, channels: 2,
                                 samples: samples)
        ifLive { $0.processSampleBuffer(.audio(buffer)) }
    }

    /// The error the handler ended the broadcast with, if it did.
    public var finishError: String? { recorder.state.withLock { $0.finishError } }
    /// The last service info the handler reported (`updateServiceInfo`); empty before any.
    public var serviceInfo: [String: String] { recorder.state.withLock { $0.serviceInfo } }
    /// The last broadcast URL the handler reported (`updateBroadcastURL`), if any.
    public var broadcastURL: String? { recorder.state.withLock { $0.broadcastURL } }
}

extension MediaTime {
    /// `duration` as a media time, to the nanosecond.
    fileprivate init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(nanoseconds: seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
