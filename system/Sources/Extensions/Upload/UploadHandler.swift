import FoundationEssentials
import Dispatch
import ReplayCodec
public import ReplayExtensionKit
public import ReplayMedia
import ReplayProcessing
import ReplaySystem
import Synchronization

/// The RTMP, SRT and HLS extensions: shapes the samples with the live video source and the
/// audio mixer, encodes them on the callback thread (pictures go back to the daemon as soon
/// as x264 has its copy), and leaves sending to an `IngestUploader`.
///
/// The person and the host app see the connection in the service info: `connection`
/// (connecting, live, reconnecting), `server`, `sent-kbytes`, `buffered-seconds`,
/// `dropped-packets`, `reconnects`, and `last-error` while reconnecting.
public final class UploadHandler: BroadcastSampleHandler, @unchecked Sendable {
    // @unchecked: samples, the encoder and the video source are used on the callback thread,
    // or by the pause keep-alive while callbacks are quiet (resume and finish wait for it);
    // what the uploader's thread touches is immutable once it starts, a Mutex or an Atomic.
    public let service: UploadService
    /// About 20 s of a 2.5 Mbit/s stream, kept while the server is away.
    public static let backlogLimit = 6 * 1024 * 1024
    /// How long a finishing broadcast may spend sending what is queued.
    static let drainTimeout = 3.0

    private var settings: UploadSettings?
    private var source: VideoSource?
    private var mixer = AudioMixer()
    private var encoder: LiveEncoder?
    private var uploader: IngestUploader?
    private let backlog = PacketBacklog(limitBytes: UploadHandler.backlogLimit)
    /// Fits pictures to the stream's size after the screen changed size mid-broadcast.
    private let resize = PictureTransform()
    /// What the uploader's thread last said, and when it was last reported; both threads report.
    private let connection = Mutex<(state: IngestUploader.Connection, detail: String?, reportedAt: Int64)>((.connecting, nil, 0))
    private let failed = Atomic<Bool>(false)
    /// The last picture sent: repeated while the broadcast is paused.
    private var lastPicture: VideoSample?
    private var keepalive: Keepalive?
    /// While paused the stream stays up with the last picture this often (and silence), so
    /// servers and viewers see a still stream rather than a dead one.
    static let pauseRepeat = 0.5

    public init(service: UploadService) {
        self.service = service
    }

    public override func broadcastStarted(setupInfo: [String: String]) {
        do {
            let settings = try UploadSettings(service: service, setup: setupInfo)
            self.settings = settings
            source = VideoSource(settings: settings.video)
            if let watch = settings.watchURL { updateBroadcastURL(watch) }
            else if service == .hls { updateBroadcastURL("file://\(settings.target.url)") }
        } catch {
            fail(error.description)
        }
    }

    public override func processSampleBuffer(_ sample: SampleBuffer) {
        guard !failed.load(ordering: .relaxed), let source else { return }
        switch sample {
        case .video(let frame):
            guard let shaped = source.process(frame) else { return }
            encode(shaped)
        case .audio(let buffer):
            mixer.append(buffer)
            for period in mixer.nextPeriods() { encode(audio: period) }
            // Audio arrives every ~21 ms: the clock for repeating a still picture.
            if let repeated = source.idle(now: buffer.time) { encode(repeated) }
        }
        reportIfDue()
    }

    public override func broadcastPaused() {
        guard encoder != nil, let last = lastPicture, !failed.load(ordering: .relaxed) else { return }
        // A copy: the shared surface goes back to the daemon for the whole pause.
        let still = last.pixels.copy()
        lastPicture = nil
        let keepalive = Keepalive()
        self.keepalive = keepalive
        // Callbacks are quiet until resumed or finished, which wait for this thread to end, so
        // the encoder is never used by two threads at once.
        Threads.detach { [self] in
            while !keepalive.stopped {
                let wake = MonotonicClock.nanoseconds() + Int64(Self.pauseRepeat * 1e9)
                while MonotonicClock.nanoseconds() < wake && !keepalive.stopped { Threads.sleep(seconds: 0.02) }
                if keepalive.stopped { break }
                let now = MediaTime(nanoseconds: MonotonicClock.nanoseconds())
                guard let encoder else { break }
                do {
                    backlog.append(try encoder.encode(still, at: now))
                    backlog.append(try encoder.encode(audio: [], at: now))  // fills the pause with silence
                } catch {
                    fail("cannot encode the video: \(error)")
                    break
                }
            }
            keepalive.done.signal()
        }
    }

    public override func broadcastResumed() { endKeepalive() }

    private func endKeepalive() {
        guard let keepalive else { return }
        keepalive.stop.store(true, ordering: .relaxed)
        keepalive.done.wait()
        self.keepalive = nil
    }

    public override func broadcastFinished() {
        endKeepalive()
        guard let encoder, let uploader, !failed.load(ordering: .relaxed) else { return }
        do {
            for period in mixer.finish() { encode(audio: period) }
            backlog.append(try encoder.finish())
        } catch {
            StandardStreams.writeError("upload extension: \(error)\n")
        }
        uploader.finish(drainTimeout: Self.drainTimeout)
    }

    private func encode(_ frame: VideoSample) {
        do {
            let encoder = try encoderFor(frame.pixels)
            if uploader?.takeKeyframeRequest() == true { encoder.requestKeyframe() }
            // A stream keeps its size: a resized screen is scaled to it, not a failure.
            let pixels = resize.scale(frame.pixels, width: encoder.format.width, height: encoder.format.height)
            backlog.append(try encoder.encode(pixels, at: frame.time))
            lastPicture = VideoSample(time: frame.time, pixels: pixels)
        } catch {
            fail("cannot encode the video: \(error)")
        }
    }

    private func encode(audio period: AudioBuffer) {
        // Until the first picture there is no stream (nor an origin) to put audio in.
        guard let encoder else { return }
        do {
            backlog.append(try encoder.encode(audio: period.samples, at: period.time))
        } catch {
            fail("cannot encode the audio: \(error)")
        }
    }

    /// The encoder and the uploader are made with the first picture, whose size and format they take.
    private func encoderFor(_ pixels: PixelBuffer) throws(CodecError) -> LiveEncoder {
        if let encoder { return encoder }
        guard let settings else { throw CodecError(.encoderFailed, "the broadcast has no settings") }
        let encoder = try LiveEncoder(format: LiveFormat(width: pixels.width, height: pixels.height, picture: pixels.format,
                                                         fps: settings.fps, videoBitRate: settings.videoBitRate))
        self.encoder = encoder
        let uploader = IngestUploader(
            backlog: backlog,
            policy: .init(reconnects: settings.reconnects, reconnectTimeout: settings.reconnectTimeout),
            connect: { () throws(CodecError) -> IngestConnection in try IngestConnection(target: settings.target, encoder: encoder) },
            events: { [weak self] event in self?.handle(event) })
        self.uploader = uploader
        uploader.start()
        return encoder
    }

    /// From the uploader's thread.
    private func handle(_ event: IngestUploader.Event) {
        switch event {
        case .state(let state, let detail):
            connection.withLock { $0 = (state, detail, 0) }
            report()
        case .failed(let message):
            fail(message)
        }
    }

    private func reportIfDue() {
        if MonotonicClock.nanoseconds() - connection.withLock({ $0.reportedAt }) >= 2_000_000_000 { report() }
    }

    /// Sends the service info; called from both threads (settings, backlog and uploader are set
    /// before the uploader's thread starts, and are thread-safe).
    private func report() {
        let (state, detail) = connection.withLock { current in
            current.reportedAt = MonotonicClock.nanoseconds()
            return (current.state, current.detail)
        }
        var info = ["connection": state.rawValue,
                    "server": settings?.target.displayURL ?? "",
                    "buffered-seconds": String(printf: "%.1f", backlog.bufferedDuration.seconds),
                    "dropped-packets": String(backlog.droppedPackets)]
        if let uploader {
            info["reconnects"] = String(max(0, uploader.connections - 1))
            info["sent-kbytes"] = String(uploader.bytesSent / 1000)
        }
        if let detail { info["last-error"] = detail }
        updateServiceInfo(info)
    }

    private func fail(_ message: String) {
        guard !failed.exchange(true, ordering: .relaxed) else { return }
        finishBroadcast(error: message)
    }
}

/// The thread that keeps a paused stream up, and how to end it.
private final class Keepalive: Sendable {
    let stop = Atomic<Bool>(false)
    let done = DispatchSemaphore(value: 0)
    var stopped: Bool { stop.load(ordering: .relaxed) }
}

/// The `main` of the RTMP, SRT and HLS extensions.
public enum UploadExtension {
    public static func run(_ service: UploadService) -> Never {
        BroadcastExtension.run(UploadHandler(service: service))
    }
}
