import ReplayDBus
@_spi(OpenReplayKitInternal) public import ReplayMedia
@_spi(OpenReplayKitInternal) import ReplayProcessing
public import ReplaySystem

/// Captures a monitor or a window through the ScreenCast portal and PipeWire (Wayland) as a
/// variable-frame-rate stream of I420 frames, like `ScreenCapture` does on X11.
///
/// The compositor sends a frame only when the screen changed; the newest one is held until
/// the frame-rate cap allows the next picture, older ones go straight back. The last picture
/// is repeated after `repeatInterval` of stillness so encoders and viewers never starve.
/// Opening it asks the portal (a dialog unless `request.restoreToken` is honoured) and
/// waits for the stream's first format, so `frameSize` is known when it returns.
public final class PortalScreenCapture: ScreenCapturing {
    /// One portal session and the PipeWire stream it handed us.
    private struct Cast {
        let session: ScreenCastSession
        let stream: PipeWireStream
    }

    private let connection: DBusConnection
    private var cast: Cast
    private var request: ScreenCastRequest
    private let options: ScreenCaptureOptions
    private let formatTimeout: Double
    /// GNOME's mutter closes a monitor's screen cast when the monitors change (a rotation, a
    /// new mode): watched so that the cast is reopened then, and only then. Nil elsewhere.
    private let monitorChanges: DBusSubscription?
    private var lastMonitorChange = Int64.min / 2
    /// Told each new restore token the portal returns (the daemon keeps it).
    private let keepToken: (@Sendable (String) -> Void)?
    /// Pictures the compositor sent on casts closed before this one.
    private var receivedBefore = 0
    public var pool: PixelBufferPool
    /// Brings turned pictures (a turned wlroots output) upright.
    private let turner = PictureTurner()
    /// The last picture converted from an upright frame: where the next one's unchanged parts come from.
    private var lastConverted: PixelBuffer?
    /// How many pictures were converted only where the producer said the screen changed
    /// (damage metadata); the others were converted whole. Read after `run` returns.
    public private(set) var picturesConvertedInPart = 0
    public let counters: CaptureCounters
    /// The newest token the portal returned for next time (persist mode 2), if any.
    public private(set) var restoreToken: String?
    /// The PipeWire node being read.
    public private(set) var nodeID: UInt32
    /// Changes, on `run`'s thread, when the compositor sends another size.
    private var size: (width: Int, height: Int)

    public var frameSize: (width: Int, height: Int) { size }
    /// How many pictures the compositor sent (it sends one per change of the screen, up to
    /// the negotiated rate); read after `run` returns.
    public var framesFromCompositor: Int { receivedBefore + cast.stream.received }

    /// - Parameters:
    ///   - busAddress: the session bus (`unix:path=…`); nil for this login session's.
    ///   - keepToken: told every restore token the portal returns, also when a cast is reopened.
    public init(options: ScreenCaptureOptions, request: ScreenCastRequest, busAddress: String? = nil,
                formatTimeout: Double = 5, counters: CaptureCounters = CaptureCounters(),
                keepToken: (@Sendable (String) -> Void)? = nil) throws(CaptureError) {
        guard options.filter == .everything else {
            throw CaptureError(.noDisplay, "capturing one app's own windows is not available through the ScreenCast portal")
        }
        switch (options.area, request.source) {
        case (.screen, .monitor), (.pickWindow, .window): break
        default:
            throw CaptureError(.areaUnavailable, "through the ScreenCast portal the desktop's dialog chooses the monitor or "
                + "window (`--window pick` asks it for a window): a monitor, window or region can be named only on X11")
        }
        self.options = options
        self.counters = counters
        self.request = request
        self.formatTimeout = formatTimeout
        self.keepToken = keepToken
        pool = PixelBufferPool()
        do {
            connection = try DBusConnection(address: busAddress)
        } catch {
            throw CaptureError(.portalUnavailable, "no session bus for the ScreenCast portal: \(error)")
        }
        monitorChanges = try? connection.subscribe(path: "/org/gnome/Mutter/DisplayConfig", interface: "org.gnome.Mutter.DisplayConfig",
                                                   member: "MonitorsChanged")
        cast = try Self.open(request, on: connection, fps: options.fps, formatTimeout: formatTimeout)
        nodeID = cast.session.streams[0].nodeID
        restoreToken = cast.session.restoreToken
        if let token = restoreToken { keepToken?(token) }
        let format = cast.stream.format!  // open returns only with a format
        let even = evenSize(width: format.width, height: format.height)
        guard even.width > 0, even.height > 0 else {
            throw CaptureError(.pipeWireFailed, "the PipeWire stream is \(format.width)x\(format.height), too small to encode")
        }
        size = even
    }

    /// The frame rate asked of the compositor for a capture capped at `cap`: twice it. Mutter
    /// drops a frame that comes sooner than 1/max after the last, and frames land on its refresh
    /// grid, so 30 fps content often comes one refresh early: at exactly the cap it sent 88% of
    /// a 30 fps scene, at twice 99%. The pacer keeps the cap (content faster than it costs the
    /// compositor more copies).
    static func requestedFramerate(cap: Int) -> Int { cap * 2 }

    /// Asks the portal for the monitor and connects to its stream; returns once the stream
    /// has a format and (if the compositor sends one soon) its first picture, or at once when
    /// `stop` is raised meanwhile (a reopen that waits must not hold up a stop).
    private static func open(_ request: ScreenCastRequest, on connection: DBusConnection, fps: Int,
                             formatTimeout: Double, stop: StopFlag? = nil) throws(CaptureError) -> Cast {
        let session = try ScreenCastPortal(bus: SDBusPortalBus(connection)).open(request)
        let source = session.streams[0]
        let stream = try PipeWireStream(.portal(remote: session.takePipeWireRemote(), node: source.nodeID),
                                        preferredWidth: source.width ?? 1920, preferredHeight: source.height ?? 1080,
                                        maxFPS: requestedFramerate(cap: fps))
        let deadline = MonotonicClock.nanoseconds() + Int64(formatTimeout * 1e9)
        while stream.format == nil, stop?.isRaised != true {
            guard MonotonicClock.nanoseconds() < deadline else {
                if let why = stream.whyNoFormat() {
                    throw CaptureError(.pipeWireFailed, "the desktop's screen cast cannot be read: \(why)")
                }
                throw CaptureError(.pipeWireFailed, "the PipeWire stream of node \(source.nodeID) agreed on no format within \(Int(formatTimeout)) s")
            }
            try stream.iterate(timeout: 0.1)
        }
        // The compositor sends its first picture as the stream starts: wait a moment for it, so
        // a recording has a picture from its first instant (a still screen sends no more).
        let firstPicture = MonotonicClock.nanoseconds() + 1_000_000_000
        while !stream.takeNewest(), MonotonicClock.nanoseconds() < firstPicture, stop?.isRaised != true {
            try stream.iterate(timeout: 0.05)
        }
        return Cast(session: session, stream: stream)
    }

    /// Notes a monitor change the bus has delivered by now (never waits).
    private func noteMonitorChanges() {
        if let changes = try? monitorChanges?.drain(), !changes.isEmpty { lastMonitorChange = MonotonicClock.nanoseconds() }
    }

    /// The compositor closed the cast. After a monitor change (GNOME does this on a rotation or
    /// a new mode) the same monitor is asked for again with the restore token, which needs no
    /// dialog, and capture goes on at its new size. Otherwise the desktop or the person stopped
    /// sharing, which ends the capture: it is never restarted behind the person's back.
    private func reopenAfterMonitorChange(stop: StopFlag) throws(CaptureError) {
        noteMonitorChanges()
        let window: Int64 = 3_000_000_000
        if MonotonicClock.nanoseconds() - lastMonitorChange > window, let monitorChanges,
           (try? monitorChanges.next(timeout: 1)) != nil {
            lastMonitorChange = MonotonicClock.nanoseconds()
        }
        guard MonotonicClock.nanoseconds() - lastMonitorChange <= window else {
            throw CaptureError(.connectionLost, "the desktop stopped the screen cast")
        }
        receivedBefore += cast.stream.received
        // Gone from PipeWire before the next cast is asked for: see `disconnect`.
        cast.stream.disconnect()
        cast.session.close()
        request.restoreToken = restoreToken ?? request.restoreToken
        cast = try Self.open(request, on: connection, fps: options.fps, formatTimeout: formatTimeout, stop: stop)
        nodeID = cast.session.streams[0].nodeID
        if let token = cast.session.restoreToken {
            restoreToken = token
            keepToken?(token)
        }
    }

    deinit { cast.session.close() }

    /// Delivers frames to `output` until `stop` is raised. Throws when the stream ends (but
    /// for GNOME's close on a monitor change, after which the cast is reopened). A new size is
    /// reported to `output`, and capture goes on at that size, as on X11. Once `stop`
    /// is raised the portal session is closed at once: the compositor stops casting and frees
    /// its picture buffers without waiting for this object to go.
    public func run(output: any CaptureOutput, stop: StopFlag) throws(CaptureError) {
        defer {
            if stop.isRaised {
                cast.stream.disconnect()
                cast.session.close()
            }
        }
        let interval = 1_000_000_000 / Int64(max(1, options.fps))
        var pacer = FramePacer(interval: interval, now: MonotonicClock.nanoseconds())
        var lastDelivery = Int64.min / 2
        var previous: PixelBuffer?
        // A picture held since before the run (the first one, taken at open) still shows the
        // screen now: a newer one would have replaced it. It is dated at the run's start.
        let started = MonotonicClock.nanoseconds()

        while !stop.isRaised {
            let stream = cast.stream
            let now = MonotonicClock.nanoseconds()
            let deadline = stream.holdsFrame || pointerMoved() ? pacer.nextFrame(after: now)
                : previous == nil ? now + interval : lastDelivery + options.repeatInterval.nanoseconds
            // Wake at least once an interval to see `stop`.
            try stream.iterate(timeout: Double(max(0, min(deadline - now, interval))) / 1e9)
            noteMonitorChanges()
            if stream.producerGone {
                try reopenAfterMonitorChange(stop: stop)
                // A new stream: nothing is known of what changed, nor where its pointer was drawn.
                lastConverted = nil
                continue
            }
            stream.takeNewest()
            // A new format, or a picture turned another way, is a new size.
            if let picture = stream.pictureSize, evenSize(width: picture.width, height: picture.height) != size {
                let even = evenSize(width: picture.width, height: picture.height)
                guard even.width > 0, even.height > 0 else {
                    throw CaptureError(.pipeWireFailed, "the PipeWire stream is \(picture.width)x\(picture.height), too small to encode")
                }
                output.formatChanged(width: even.width, height: even.height)
                // A session that ends on a resize (in-app capture) has stopped us.
                guard !stop.isRaised else { return }
                size = even
                // The last picture is of the old size: no base for the next.
                lastConverted = nil
            }
            let later = MonotonicClock.nanoseconds()
            if stream.holdsFrame {
                guard pacer.take(at: later) else { continue }
                guard let pixels = pool.take(width: size.width, height: size.height, format: PixelConverter.format) else {
                    // Every surface is still with a slow consumer: this slot is lost, and
                    // counted; the frame stays held for the next one.
                    counters.count(delivered: false, repeated: false)
                    continue
                }
                let time = MediaTime(nanoseconds: max(stream.heldSince, started))
                let turn = stream.turn
                let parts = stream.takeDamagedParts(width: size.width, height: size.height)
                let base = lastConverted
                lastConverted = nil
                let converted = stream.withHeldFrame { data, rowBytes, format in
                    if options.protectedWindows.map({ !$0.windows.isEmpty }) ?? false || !options.excludedWindows.isEmpty {
                        // Wayland does not say where a protected window is: fail closed, all black.
                        Self.paintBlack(pixels)
                        stream.cursor.forgetDrawing()
                        return true
                    }
                    if turn != .none {
                        // (A metadata cursor comes from mutter, which turns pictures itself.)
                        turner.convertUpright(data, rowBytes: rowBytes, format.layout, turn, into: pixels)
                        stream.cursor.forgetDrawing()
                        return true
                    }
                    if let parts, let base, base.width == pixels.width, base.height == pixels.height {
                        // Only what changed: the rest is the last picture's, without its pointer.
                        PictureTransform.copy(base, into: pixels)
                        stream.cursor.restore(into: pixels)
                        for part in parts { format.layout.convert(data, rowBytes: rowBytes, into: pixels, part: part) }
                        picturesConvertedInPart += 1
                    } else {
                        format.layout.convert(data, rowBytes: rowBytes, into: pixels)
                        stream.cursor.forgetDrawing()
                    }
                    if options.showCursor { stream.cursor.draw(into: pixels) }
                    lastConverted = pixels
                    return true
                } ?? false
                stream.releaseHeld()
                guard converted else { continue }
                lastDelivery = later
                previous = pixels
                counters.count(delivered: output.offer(VideoSample(time: time, pixels: pixels)), repeated: false)
            } else if pointerMoved(), let base = lastConverted, pacer.take(at: later),
                      let pixels = pool.take(width: size.width, height: size.height, format: PixelConverter.format) {
                // The pointer moved over a still screen: the last picture, with the pointer in its new place.
                PictureTransform.copy(base, into: pixels)
                stream.cursor.restore(into: pixels)
                stream.cursor.draw(into: pixels)
                lastConverted = pixels
                lastDelivery = later
                previous = pixels
                counters.count(delivered: output.offer(VideoSample(time: MediaTime(nanoseconds: later), pixels: pixels)), repeated: false)
            } else if let previous, later - lastDelivery >= options.repeatInterval.nanoseconds, pacer.take(at: later) {
                lastDelivery = later
                let sample = VideoSample(time: MediaTime(nanoseconds: later), pixels: previous, isRepeat: true)
                counters.count(delivered: output.offer(sample), repeated: true)
            }
        }
    }

    /// The compositor's metadata cursor moved or changed since it was drawn, over a picture it can be redrawn on.
    private func pointerMoved() -> Bool {
        options.showCursor && cast.stream.cursor.changed && lastConverted != nil
    }

    private static func paintBlack(_ pixels: PixelBuffer) {
        let luma = pixels.width * pixels.height
        let bytes = pixels.mutableBytes
        bytes.baseAddress!.initializeMemory(as: UInt8.self, repeating: 16, count: luma)
        (bytes.baseAddress! + luma).initializeMemory(as: UInt8.self, repeating: 128, count: bytes.count - luma)
    }
}

/// Wayland: the monitor, or a window the person picks, through the ScreenCast portal and
/// PipeWire; audio through the PulseAudio API, which pipewire-pulse serves on PipeWire desktops.
public struct PortalCaptureBackend: CaptureBackend {
    public var name: String { "portal" }
    /// The session bus; nil for this login session's.
    public let busAddress: String?
    /// Where the restore tokens live between sessions.
    public let tokens: ScreenCastTokens
    /// How long to wait for the portal's answers (a dialog waits for a person).
    public let responseTimeout: Double

    public init(busAddress: String? = nil, tokens: ScreenCastTokens = ScreenCastTokens(), responseTimeout: Double = 60) {
        self.busAddress = busAddress
        self.tokens = tokens
        self.responseTimeout = responseTimeout
    }

    public func makeScreenCapture(_ options: ScreenCaptureOptions) throws(CaptureError) -> any ScreenCapturing {
        let source = ScreenCastSource(for: options.area)
        let tokens = self.tokens.keeper(for: source)
        // The pointer as metadata where the portal offers it (GNOME), drawn by us; else drawn in by the compositor.
        let request = ScreenCastRequest(source: source, showCursor: options.showCursor, drawsMetadataCursor: true,
                                        restoreToken: tokens.token, responseTimeout: responseTimeout)
        return try PortalScreenCapture(options: options, request: request, busAddress: busAddress) { tokens.keep($0) }
    }

    public func makeAudioCapture(_ source: AudioSource, selection: AudioSelection) throws(CaptureError) -> any AudioCapturing {
        try AudioCapture(source: source, selection: selection)
    }

    public func grabHotkey(_ chord: KeyChord, onPress: @escaping @Sendable () -> Void) throws(CaptureError) -> any HotkeyRelease {
        try PortalDesktop().grabHotkey(chord, onPress: onPress)
    }

    public func listSources() -> SourceListing { PortalDesktop().listSources() }
}
