public import ReplayMedia

/// Shapes captured frames for a live extension, as Twilio's ReplayKitVideoSource does and
/// then some: a format request (native or fit in a box), a frame-rate cap that depends on
/// the mode, rotation tags passed through or applied, and the last frame repeated after
/// 250 ms of stillness so encoders and viewers never starve.
///
/// - Screencast: native size, at most 15 fps, detail first (conferencing).
/// - Video: box-limited, 15 fps for app content, but content aware: while the frames that
///   really change arrive at 22–27 a second (24 or 25 fps playback drawn by an app), the cap
///   rises to 30 so the film's cadence is kept, and falls back once that ends.
public final class VideoSource {
    /// What the stream is for, which sets the default size and frame-rate cap.
    public enum Mode: Sendable, Equatable {
        /// Conferencing: native size, at most 15 fps, detail first.
        case screencast
        /// Streaming: fitted in 1280, 15 fps, 30 while film-rate playback is detected.
        case video
    }

    /// How to shape the frames; fixed for the source's life.
    public struct Settings: Sendable, Equatable {
        /// Sets the defaults for the size and the frame-rate cap.
        public var mode: Mode
        /// The output size: native or fitted in a box (the picture format is never changed).
        public var format: VideoFormatRequest
        /// Turn pictures upright instead of passing the rotation tag on.
        public var applyRotation: Bool
        /// A fixed frame-rate cap in place of the mode's content-aware one: a streaming service
        /// wants a steady 30 fps whatever is on the screen.
        public var frameRateCap: Int?

        /// Settings for `mode`; `format` nil takes the mode's default size.
        public init(mode: Mode, format: VideoFormatRequest? = nil, applyRotation: Bool = false, frameRateCap: Int? = nil) {
            self.mode = mode
            // Screencast keeps every pixel; video fits 1280 unless asked otherwise.
            self.format = format ?? (mode == .screencast ? .native : .fit(maxDimension: 1280))
            self.applyRotation = applyRotation
            self.frameRateCap = frameRateCap.map { max(1, $0) }
        }
    }

    /// Frames per second let through for app content (video mode) and screencasts.
    public static let appContentCap = 15
    /// Frames per second let through while film-rate playback is detected (video mode).
    public static let playbackCap = 30
    /// After this long without a frame, the last one is sent again (`idle(now:)`).
    public static let idleRepeat = MediaTime(nanoseconds: 250_000_000)
    /// How long the content rate must stay in (or out of) the playback band to switch.
    static let switchAfter: Int64 = 1_000_000_000

    /// How this source shapes frames.
    public let settings: Settings
    private let transform = PictureTransform()
    private var changeTimes: [Int64] = []
    private var lastEmitted: Int64?
    private var lastOutput: VideoSample?
    private var bandSince: Int64?
    private var outsideSince: Int64?
    /// True while the content changes at 22–27 fps (a film playing), in video mode.
    public private(set) var isPlaybackDetected = false

    /// A source shaping frames as `settings` say. Use it from one thread (the handler's).
    public init(settings: Settings) {
        self.settings = settings
    }

    /// The frame rate frames are let through at now.
    public var cap: Int {
        if let fixed = settings.frameRateCap { return fixed }
        return settings.mode == .video && isPlaybackDetected ? Self.playbackCap : Self.appContentCap
    }

    /// The frames to send for one captured frame: none (over the cap) or one, scaled and
    /// rotated as asked.
    public func process(_ sample: VideoSample) -> VideoSample? {
        let now = sample.time.nanoseconds
        updatePlaybackDetection(at: now, changed: !sample.isRepeat)
        // A frame is let through when a cap interval has passed, with 10% slack so content at
        // exactly the cap rate is not decimated by timer jitter.
        let interval = 1_000_000_000 / Int64(cap)
        if let last = lastEmitted, now - last < interval * 9 / 10 { return nil }
        lastEmitted = now
        let output = shape(sample)
        lastOutput = output
        return output
    }

    /// The last frame again, timed `now`, when nothing was sent for 250 ms.
    public func idle(now: MediaTime) -> VideoSample? {
        updatePlaybackDetection(at: now.nanoseconds, changed: false)
        guard let last = lastOutput, let emitted = lastEmitted, now.nanoseconds - emitted >= Self.idleRepeat.nanoseconds else {
            return nil
        }
        lastEmitted = now.nanoseconds
        let repeated = VideoSample(time: now, pixels: last.pixels, isRepeat: true, orientation: last.orientation)
        lastOutput = repeated
        return repeated
    }

    private func shape(_ sample: VideoSample) -> VideoSample {
        var pixels = sample.pixels
        var orientation = sample.orientation
        if settings.applyRotation && orientation != .up {
            pixels = transform.rotateUpright(pixels, from: orientation)
            orientation = .up
        }
        let size = settings.format.size(forWidth: pixels.width, height: pixels.height)
        pixels = transform.scale(pixels, width: size.width, height: size.height)
        return VideoSample(time: sample.time, pixels: pixels, isRepeat: sample.isRepeat, orientation: orientation)
    }

    /// Tracks how fast the content really changes over the last second, and switches the
    /// playback cap on or off once the rate has held in or out of 22–27 fps for a second.
    private func updatePlaybackDetection(at now: Int64, changed: Bool) {
        if changed { changeTimes.append(now) }
        changeTimes.removeAll { now - $0 > 1_000_000_000 }
        let rate = changeTimes.count
        let inBand = (22...27).contains(rate)
        if inBand {
            outsideSince = nil
            if bandSince == nil { bandSince = now }
            if let since = bandSince, now - since >= Self.switchAfter { isPlaybackDetected = true }
        } else {
            bandSince = nil
            if outsideSince == nil { outsideSince = now }
            if let since = outsideSince, now - since >= Self.switchAfter { isPlaybackDetected = false }
        }
    }
}
