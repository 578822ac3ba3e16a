public import ReplayMedia
public import ReplaySystem
import ReplayProcessing
import Synchronization

/// What a screen capture takes, and how often.
public struct ScreenCaptureOptions: Sendable {
    public var fps: Int
    public var showCursor: Bool
    public var repeatInterval: MediaTime
    /// Everything, or only one process's own windows (in-app capture).
    public var filter: WindowFilter
    /// Windows painted black in every frame.
    public var protectedWindows: ProtectedWindows?

    public init(fps: Int, showCursor: Bool, repeatInterval: MediaTime = MediaTime(nanoseconds: 250_000_000),
                filter: WindowFilter = .everything, protectedWindows: ProtectedWindows? = nil) {
        self.fps = fps
        self.showCursor = showCursor
        self.repeatInterval = repeatInterval
        self.filter = filter
        self.protectedWindows = protectedWindows
    }
}

/// How many frames were taken, and how many the consumer could not accept; read live by
/// other threads for progress reports.
public final class CaptureCounters: Sendable {
    private let values = Mutex((captured: 0, repeated: 0, dropped: 0))
    public init() {}
    public var captured: Int { values.withLock { $0.captured } }
    public var repeated: Int { values.withLock { $0.repeated } }
    public var dropped: Int { values.withLock { $0.dropped } }
    public func count(delivered: Bool, repeated: Bool) {
        values.withLock { values in
            if !delivered { values.dropped += 1 } else if repeated { values.repeated += 1 } else { values.captured += 1 }
        }
    }
}

/// Captures the screen of one X display as a variable-frame-rate stream of I420 frames.
///
/// A frame is taken only when DAMAGE reports a change (or the pointer moved), at most
/// `fps` times a second; a still screen costs almost nothing. So that encoders and
/// viewers never starve, the last picture is repeated after `repeatInterval` of stillness.
public final class ScreenCapture: ScreenCapturing {
    public typealias Options = ScreenCaptureOptions

    private let display: X11Display
    private let options: Options
    private var image: SharedImage
    private let cursor: CursorOverlay
    /// Who owns which window, for in-app capture and protected windows; made on first need.
    private var windowStack: WindowStack?
    /// Where pictures go: by default memory of its own; a fixed pool of shared surfaces lets
    /// them reach an upload extension without a copy. Set it before `run`.
    public var pool: PixelBufferPool
    public let counters: CaptureCounters

    /// The size of the frames delivered: the screen's, rounded down to even for 4:2:0.
    public var frameSize: (width: Int, height: Int) { evenSize(width: display.width, height: display.height) }

    /// Connects to `displayName` (nil: `$DISPLAY`); throws a clear error when no X server is there.
    public init(displayName: String?, options: Options, counters: CaptureCounters = CaptureCounters()) throws(CaptureError) {
        self.counters = counters
        pool = PixelBufferPool()
        display = try X11Display(name: displayName)
        self.options = options
        image = try SharedImage(display: display, width: display.width, height: display.height)
        cursor = CursorOverlay(display: display)
        if case .onlyProcess = options.filter { windowStack = try WindowStack(display: display) }
    }

    /// Delivers frames to `output` until `stop` is raised. Throws when the display went away.
    /// A change of the screen's size is reported to `output`, and capture goes on at the new
    /// size: what a session does with pictures of another size is its decision.
    public func run(output: any CaptureOutput, stop: StopFlag) throws(CaptureError) {
        let interval = 1_000_000_000 / Int64(max(1, options.fps))
        var pacer = FramePacer(interval: interval, now: MonotonicClock.nanoseconds())
        var lastDelivery = Int64.min / 2
        var dirty = true
        var previous: PixelBuffer?
        var protectionGeneration = options.protectedWindows?.generation ?? 0
        var failedGrabs = 0

        while !stop.isRaised {
            let now = MonotonicClock.nanoseconds()
            // A window protected or released since the last frame: take a fresh one at once.
            if let generation = options.protectedWindows?.generation, generation != protectionGeneration {
                protectionGeneration = generation
                dirty = true
            }
            if dirty && pacer.take(at: now) {
                guard let pixels = pool.take(width: frameSize.width, height: frameSize.height, format: PixelConverter.format) else {
                    // Every surface is still with a slow consumer: this frame is lost, and counted.
                    // The screen stays dirty, so the next frame slot tries again.
                    counters.count(delivered: false, repeated: false)
                    continue
                }
                dirty = false
                display.clearDamage()
                let time = MediaTime(nanoseconds: MonotonicClock.nanoseconds())
                guard image.grab(root: display.root) else {
                    // The screen shrank under us, and RandR's event has not come yet: ask its size.
                    try display.checkConnection()
                    if display.refreshSize() != nil {
                        guard try adoptNewSize(output: output, stop: stop) else { return }
                        failedGrabs = 0
                        dirty = true
                        continue
                    }
                    failedGrabs += 1
                    if failedGrabs >= 3 { throw CaptureError(.contentResized, "content resized: the screen changed size during the capture") }
                    dirty = true
                    continue
                }
                failedGrabs = 0
                maskWindows()
                if options.showCursor {
                    cursor.draw(into: image.pixels, width: image.width, height: image.height, bytesPerRow: image.bytesPerRow)
                }
                PixelConverter.convertBGRA(image.pixels, bytesPerRow: image.bytesPerRow, into: pixels)
                lastDelivery = now
                previous = pixels
                deliver(VideoSample(time: time, pixels: pixels), to: output, repeated: false)
                continue
            }

            // Nothing delivered yet: nothing to repeat, so wait for damage (never a deadline in the past).
            let repeatAt = previous == nil ? now + interval : lastDelivery + options.repeatInterval.nanoseconds
            let deadline = dirty ? pacer.nextFrame(after: now) : min(repeatAt, now + interval)
            switch try display.waitForEvent(until: deadline, now: MonotonicClock.nanoseconds) {
            case .damaged:
                dirty = true
            case .resized:
                guard try adoptNewSize(output: output, stop: stop) else { return }
                failedGrabs = 0
                dirty = true
            case .timedOut:
                guard !dirty else { continue }
                let now = MonotonicClock.nanoseconds()
                if options.showCursor, let pointer = cursor.pointerPosition(), pointer != cursor.position {
                    dirty = true
                } else if let previous, now - lastDelivery >= options.repeatInterval.nanoseconds, pacer.take(at: now) {
                    lastDelivery = now
                    let sample = VideoSample(time: MediaTime(nanoseconds: now), pixels: previous, isRepeat: true)
                    deliver(sample, to: output, repeated: true)
                }
            }
        }
    }

    /// Reports the screen's new size and takes pictures at it from now on (a fresh one at
    /// once, as the caller marks the screen dirty); false when that report stopped the
    /// capture, as sessions that cannot change size do.
    private func adoptNewSize(output: any CaptureOutput, stop: StopFlag) throws(CaptureError) -> Bool {
        output.formatChanged(width: frameSize.width, height: frameSize.height)
        guard !stop.isRaised else { return false }
        image = try SharedImage(display: display, width: display.width, height: display.height)
        return true
    }

    /// Blacks out what this capture must not show: other processes' windows (in-app
    /// capture) and protected windows. Fails closed: if the windows cannot be told apart,
    /// the whole picture is black.
    private func maskWindows() {
        let protected = options.protectedWindows?.windows ?? []
        guard options.filter != .everything || !protected.isEmpty else { return }
        let screen = PixelRect(x: 0, y: 0, width: image.width, height: image.height)
        if windowStack == nil { windowStack = try? WindowStack(display: display) }
        let mask: CaptureMask
        if let windowStack {
            mask = CaptureMask(windows: windowStack.windows(), filter: options.filter, protected: protected, screen: screen)
        } else {
            mask = CaptureMask(keep: [], black: [], screen: screen)
        }
        mask.apply(to: image.pixels, bytesPerRow: image.bytesPerRow)
    }

    private func deliver(_ frame: VideoSample, to output: any CaptureOutput, repeated: Bool) {
        counters.count(delivered: output.offer(frame), repeated: repeated)
    }
}
