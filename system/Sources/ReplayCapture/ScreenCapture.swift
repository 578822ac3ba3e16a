@_spi(OpenReplayKitInternal) public import ReplayMedia
public import ReplaySystem
@_spi(OpenReplayKitInternal) import ReplayProcessing
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
    /// The whole screen, or a monitor, a window or a region of it.
    public var area: ScreenArea
    /// Windows painted black in this capture only, as protected ones are in every capture.
    public var excludedWindows: Set<UInt32>

    /// How long a still screen's picture stands before it is repeated, so that encoders and
    /// viewers never starve.
    public static let stillRepeat = MediaTime(nanoseconds: 250_000_000)

    public init(fps: Int, showCursor: Bool, repeatInterval: MediaTime = stillRepeat,
                filter: WindowFilter = .everything, protectedWindows: ProtectedWindows? = nil, area: ScreenArea = .screen,
                excludedWindows: Set<UInt32> = []) {
        self.fps = fps
        self.showCursor = showCursor
        self.repeatInterval = repeatInterval
        self.filter = filter
        self.protectedWindows = protectedWindows
        self.area = area
        self.excludedWindows = excludedWindows
    }
}

/// How many frames were taken, and how many the consumer could not accept; read live by
/// other threads for progress reports.
public final class CaptureCounters: Sendable {
    private let values = Mutex((captured: 0, repeated: 0, dropped: 0))
    private let dropWatch = Mutex<(@Sendable () -> Void)?>(nil)
    public init() {}
    public var captured: Int { values.withLock { $0.captured } }
    public var repeated: Int { values.withLock { $0.repeated } }
    public var dropped: Int { values.withLock { $0.dropped } }
    public func count(delivered: Bool, repeated: Bool) {
        values.withLock { values in
            if !delivered { values.dropped += 1 } else if repeated { values.repeated += 1 } else { values.captured += 1 }
        }
        if !delivered, let watch = dropWatch.withLock({ $0 }) { watch() }
    }

    /// Calls `handler` after each dropped frame, on the capturing thread: it must return at
    /// once. A broadcast says its drops with it even while no picture goes out.
    public func whenDropped(_ handler: @escaping @Sendable () -> Void) { dropWatch.withLock { $0 = handler } }
}

/// Captures the screen of one X display (or a monitor, a window or a region of it) as a
/// variable-frame-rate stream of I420 frames.
///
/// A frame is taken only when DAMAGE reports a change (or the pointer moved), at most
/// `fps` times a second; a still screen costs almost nothing. So that encoders and
/// viewers never starve, the last picture is repeated after `repeatInterval` of stillness.
/// A window is grabbed from the screen where it is at each frame, with whatever covers it.
public final class ScreenCapture: ScreenCapturing {
    public typealias Options = ScreenCaptureOptions

    private let display: X11Display
    private let options: Options
    private var image: SharedImage
    private let cursor: CursorOverlay
    /// Who owns which window, for in-app capture and protected windows; made on first need.
    private var windowStack: WindowStack?
    /// What is grabbed: nil the whole screen; else a part, which is where `target` is now.
    private var target: AreaTarget?
    /// The part's pictures keep their first size: later grabs are fitted into it.
    private let framing: AreaFraming?
    /// Pictures of the part at its size now, before they are fitted.
    private let unfitted = PixelBufferPool()
    /// Where pictures go: by default memory of its own; a fixed pool of shared surfaces lets
    /// them reach an upload extension without a copy. Set it before `run`.
    public var pool: PixelBufferPool
    public let counters: CaptureCounters

    /// The size of the frames delivered: the screen's, rounded down to even for 4:2:0, or the
    /// size the monitor, window or region had at the start.
    public var frameSize: (width: Int, height: Int) {
        framing?.pictureSize ?? evenSize(width: display.width, height: display.height)
    }

    /// Connects to `displayName` (nil: `$DISPLAY`); throws a clear error when no X server is
    /// there, or the monitor, window or region asked for is not. Picking a window waits here
    /// for the person's click.
    public init(displayName: String?, options: Options, counters: CaptureCounters = CaptureCounters()) throws(CaptureError) {
        self.counters = counters
        pool = PixelBufferPool()
        display = try X11Display(name: displayName)
        self.options = options
        cursor = CursorOverlay(display: display)
        if case .onlyProcess = options.filter { windowStack = try WindowStack(display: display) }
        target = try AreaTarget.resolve(options.area, on: display)
        let first = try target?.rect(on: display)
        if let first, AreaFraming.grabbed(first, screen: PixelRect(x: 0, y: 0, width: display.width, height: display.height)) == nil {
            throw CaptureError(.areaUnavailable, "the window is not on the screen now (minimised, or on another workspace)")
        }
        framing = first.map { AreaFraming(first: $0) }
        image = try SharedImage(display: display, width: first?.width ?? display.width, height: first?.height ?? display.height)
        warmUp(at: first)
    }

    /// Takes one picture nobody sees and writes the first pictures' memory once. Fresh shared
    /// memory and picture memory fault in page by page on first use, which made the first
    /// three frames take 12, 7 and 3 ms instead of 1.5 ms at 1080p (more on a busy machine):
    /// whatever the screen showed in the first tens of milliseconds was recorded late. Done
    /// here, before the recording's clock starts, rather than in `run`.
    private func warmUp(at first: PixelRect?) {
        guard image.grab(root: display.root, x: first?.x ?? 0, y: first?.y ?? 0) else { return }
        // Three pictures are in flight when frames come steadily: one taken, two with the consumer.
        pool.prefill(count: 3, width: frameSize.width, height: frameSize.height, format: PixelConverter.format)
        guard let picture = pool.take(width: frameSize.width, height: frameSize.height, format: PixelConverter.format) else { return }
        // Reading the shared image once faults in our side of it. The pool is still the
        // capture's own (shared surfaces are set later), so this unmasked picture reaches nobody.
        PixelConverter.convertBGRA(image.pixels, bytesPerRow: image.bytesPerRow, into: picture)
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
                if let target {
                    // A part of the screen: grabbed where it is now; nothing while it is hidden.
                    guard let rect = try AreaFraming.grabbed(target.rect(on: display), screen: screenRect) else { continue }
                    guard try grabPart(rect, into: pixels, at: time, output: output) else { dirty = true; continue }
                    lastDelivery = now
                    previous = pixels
                    continue
                }
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
            case .resized where target != nil:
                // A part keeps its pictures' size; a monitor may have moved.
                try target?.screenChanged(on: display)
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

    private var screenRect: PixelRect { PixelRect(x: 0, y: 0, width: display.width, height: display.height) }

    /// Grabs `rect` of the screen and delivers it in `pixels`, fitted when its size is not the
    /// pictures' own; false when the server refused the grab (the screen changed under us).
    private func grabPart(_ rect: PixelRect, into pixels: PixelBuffer, at time: MediaTime,
                          output: any CaptureOutput) throws(CaptureError) -> Bool {
        if image.width != rect.width || image.height != rect.height {
            image = try SharedImage(display: display, width: rect.width, height: rect.height)
        }
        guard image.grab(root: display.root, x: rect.x, y: rect.y) else {
            try display.checkConnection()
            _ = display.refreshSize()
            return false
        }
        maskWindows(shown: rect)
        if options.showCursor {
            cursor.draw(into: image.pixels, width: image.width, height: image.height, bytesPerRow: image.bytesPerRow,
                        origin: (rect.x, rect.y))
        }
        if let framing, framing.needsFitting(rect) {
            let size = evenSize(width: rect.width, height: rect.height)
            guard let grabbed = unfitted.take(width: size.width, height: size.height, format: PixelConverter.format) else {
                return true
            }
            PixelConverter.convertBGRA(image.pixels, bytesPerRow: image.bytesPerRow, into: grabbed)
            PictureTransform.fit(grabbed, into: pixels)
        } else {
            PixelConverter.convertBGRA(image.pixels, bytesPerRow: image.bytesPerRow, into: pixels)
        }
        deliver(VideoSample(time: time, pixels: pixels), to: output, repeated: false)
        return true
    }

    /// Blacks out what this capture must not show: other processes' windows (in-app
    /// capture) and protected windows. Fails closed: if the windows cannot be told apart,
    /// the whole picture is black. `shown` is the part of the screen the picture holds.
    private func maskWindows(shown: PixelRect? = nil) {
        let protected = (options.protectedWindows?.windows ?? []).union(options.excludedWindows)
        guard options.filter != .everything || !protected.isEmpty else { return }
        let screen = shown ?? PixelRect(x: 0, y: 0, width: image.width, height: image.height)
        if windowStack == nil { windowStack = try? WindowStack(display: display) }
        let mask: CaptureMask
        if let windowStack {
            let keeping: Int32? = if case .onlyProcess(let pid) = options.filter { pid } else { nil }
            mask = CaptureMask(windows: windowStack.windows(keeping: keeping), filter: options.filter, protected: protected, screen: screen)
        } else {
            mask = CaptureMask(keep: [], black: [], screen: screen)
        }
        mask.apply(to: image.pixels, bytesPerRow: image.bytesPerRow)
    }

    private func deliver(_ frame: VideoSample, to output: any CaptureOutput, repeated: Bool) {
        counters.count(delivered: output.offer(frame), repeated: repeated)
    }
}

/// The part of the screen an area capture follows: a fixed rectangle, a monitor (found again
/// by name when the screen changes) or a window (asked where it is at every frame).
private enum AreaTarget {
    case fixed(PixelRect)
    case monitor(name: String, frame: PixelRect)
    case window(UInt32)

    /// nil for the whole screen; throws when the monitor or window is not there, the region
    /// is off the screen, or nobody picked a window.
    static func resolve(_ area: ScreenArea, on display: X11Display) throws(CaptureError) -> AreaTarget? {
        let screen = PixelRect(x: 0, y: 0, width: display.width, height: display.height)
        switch area {
        case .screen:
            return nil
        case .region(let region):
            try AreaFraming.validate(region: region, screen: screen)
            return .fixed(region)
        case .monitor(let name):
            return .monitor(name: name, frame: try find(monitor: name, on: display))
        case .window(let id):
            guard display.placement(of: id) != .gone else {
                throw CaptureError(.areaUnavailable, "there is no window 0x\(String(id, radix: 16)) (`replay sources` lists them)")
            }
            return .window(id)
        case .pickWindow(let timeout):
            guard let top = try display.pickTopLevelWindow(timeout: timeout) else {
                throw CaptureError(.areaUnavailable, "the click was on the desktop, not on a window")
            }
            // The application's window inside the window manager's frame, as `--window` names it.
            let stack = try? WindowStack(display: display)
            return .window(stack?.windows().first { $0.id == top }?.clientWindow ?? top)
        }
    }

    private static func find(monitor name: String, on display: X11Display) throws(CaptureError) -> PixelRect {
        let monitors = display.monitors()
        guard let monitor = monitors.first(where: { $0.name == name }) else {
            let known = monitors.map(\.name).joined(separator: ", ")
            throw CaptureError(.areaUnavailable, "there is no monitor named '\(name)'" + (known.isEmpty ? "" : " (there are: \(known))"))
        }
        return monitor.frame
    }

    /// Where the part is now.
    func rect(on display: X11Display) throws(CaptureError) -> PixelRect {
        switch self {
        case .fixed(let rect), .monitor(_, let rect):
            return rect
        case .window(let id):
            switch display.placement(of: id) {
            case .shown(let rect): return rect
            // Nothing to grab while it is minimised: the last picture is repeated.
            case .hidden: return PixelRect(x: 0, y: 0, width: 0, height: 0)
            case .gone: throw CaptureError(.areaUnavailable, "the recorded window was closed")
            }
        }
    }

    /// The screen changed (size, monitors): a monitor is looked up again, and must still be there.
    mutating func screenChanged(on display: X11Display) throws(CaptureError) {
        if case .monitor(let name, _) = self { self = .monitor(name: name, frame: try Self.find(monitor: name, on: display)) }
    }
}
