import CPulse
import CXCB
import FoundationEssentials
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// The demo scene: moving content at 30 fps, and once a second a full-screen white flash
/// together with a 50 ms 1 kHz beep, so anyone can check lip sync in a recording.
///
/// Flash and beep are both scheduled on the monotonic clock at the same whole-second
/// instants; the beep is placed inside the audio stream using the stream's latency, so it
/// reaches the sink when the flash reaches the screen.
public enum DemoScene {
    public static let flashDuration: Int64 = 100_000_000
    public static let beepDuration: Int64 = 50_000_000
    public static let beepFrequency = 1000.0

    /// Runs until the process is killed. Audio is optional: without a server the scene is silent.
    /// `verbose` also says on standard error when the beep stream starved (for the tests' logs:
    /// a person's first `replay record` should not show a scene's diagnostics).
    public static func run(frameRate: Int = 30, verbose: Bool = false) throws {
        // Flashes fall on whole seconds of the monotonic clock. The first waits until the audio
        // stream has settled (its latency jumps while the server starts the sink), so that
        // even the first beep is where it belongs.
        let epoch = (MonotonicClock.nanoseconds() / 1_000_000_000 + 2) * 1_000_000_000
        let stop = StopFlag()
        Threads.detach { BeepPlayer.run(epoch: epoch, stop: stop, verbose: verbose) }
        try FlashPainter(frameRate: frameRate).run(epoch: epoch)
    }

    /// Only the scene's sound: a beep at each whole second of the monotonic clock from
    /// `epoch` on, until the process is killed. The Wayland desktop's scene pairs it with a
    /// picture client that flashes on the same instants.
    public static func playBeeps(epoch: Int64, verbose: Bool = false) -> Never {
        BeepPlayer.run(epoch: epoch, stop: StopFlag(), verbose: verbose)
        exit(1)  // it returns only when there is no audio server
    }
}

/// Draws the scene into a full-screen window with plain XCB fills.
private final class FlashPainter {
    private let connection: OpaquePointer
    private let window: xcb_window_t
    private let gc: xcb_gcontext_t
    private let width: Int
    private let height: Int
    private let frameRate: Int

    init(frameRate: Int) throws {
        self.frameRate = frameRate
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(nil, &screenNumber), xcb_connection_has_error(connection) == 0 else {
            throw SystemError(call: "xcb_connect($DISPLAY)", errno: ECONNREFUSED)
        }
        self.connection = connection
        var roots = xcb_setup_roots_iterator(xcb_get_setup(connection))
        for _ in 0..<screenNumber { xcb_screen_next(&roots) }
        let screen = roots.data.pointee
        width = Int(screen.width_in_pixels)
        height = Int(screen.height_in_pixels)
        window = xcb_generate_id(connection)
        var values: [UInt32] = [screen.black_pixel, 1]
        xcb_create_window(connection, UInt8(XCB_COPY_FROM_PARENT), window, screen.root, 0, 0,
                          UInt16(width), UInt16(height), 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue),
                          screen.root_visual, UInt32(XCB_CW_BACK_PIXEL.rawValue | XCB_CW_OVERRIDE_REDIRECT.rawValue), &values)
        xcb_map_window(connection, window)
        gc = xcb_generate_id(connection)
        xcb_create_gc(connection, gc, window, 0, nil)
        xcb_flush(connection)
    }

    func run(epoch: Int64) throws {
        // Frames are drawn on a grid locked to the epoch, like a video player's: frame k at
        // epoch + k / rate, so every flash starts exactly on a frame.
        // Frames before the epoch (negative) move too: only the flashes wait for the audio.
        var frame = Self.floorDivide((MonotonicClock.nanoseconds() - epoch) * Int64(frameRate), 1_000_000_000) + 1
        while xcb_connection_has_error(connection) == 0 {
            let due = epoch + frame * 1_000_000_000 / Int64(frameRate)
            MonotonicClock.sleep(until: due)
            let sinceEpoch = due - epoch
            if sinceEpoch >= 0 && sinceEpoch % 1_000_000_000 < DemoScene.flashDuration {
                fill(0xffffff, x: 0, y: 0, width: width, height: height)
            } else {
                drawMovingContent(frame: frame)
            }
            xcb_flush(connection)
            frame += 1
            // After a stall, skip the frames that are already late rather than rushing through them.
            let now = MonotonicClock.nanoseconds()
            if now - epoch > (frame + 1) * 1_000_000_000 / Int64(frameRate) {
                frame = Self.floorDivide((now - epoch) * Int64(frameRate), 1_000_000_000) + 1
            }
        }
        throw SystemError(call: "X connection", errno: EPIPE)
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }

    private func drawMovingContent(frame signedFrame: Int64) {
        // Positions repeat every 2^20 frames; keep them positive before the epoch.
        let frame = signedFrame & 0xfffff
        fill(0x202030, x: 0, y: 0, width: width, height: height)
        let colors: [UInt32] = [0xc03030, 0x30a040, 0x3050c0, 0xc0a030, 0x8040a0, 0x30a0a0]
        let barWidth = max(8, width / 24)
        for (index, color) in colors.enumerated() {
            let travel = width + barWidth
            let x = Int((frame * Int64(6 + index * 3) + Int64(index * travel / colors.count)) % Int64(travel)) - barWidth
            fill(color, x: x, y: height * index / colors.count, width: barWidth, height: height / colors.count)
        }
        // A box bouncing across the screen.
        let size = max(16, height / 8)
        let spanX = max(1, width - size), spanY = max(1, height - size)
        let px = Int(frame * 9 % Int64(2 * spanX)), py = Int(frame * 5 % Int64(2 * spanY))
        fill(0x909090, x: px < spanX ? px : 2 * spanX - px, y: py < spanY ? py : 2 * spanY - py, width: size, height: size)
    }

    private func fill(_ color: UInt32, x: Int, y: Int, width: Int, height: Int) {
        var value = color
        xcb_change_gc(connection, gc, UInt32(XCB_GC_FOREGROUND.rawValue), &value)
        var rectangle = xcb_rectangle_t(x: Int16(clamping: x), y: Int16(clamping: y),
                                        width: UInt16(clamping: max(0, width)), height: UInt16(clamping: max(0, height)))
        xcb_poly_fill_rectangle(connection, window, gc, 1, &rectangle)
    }
}

/// Plays a continuous stream of silence with a beep at each whole second after `epoch`.
private enum BeepPlayer {
    static let sampleRate = 48_000
    static let chunkFrames = 240

    static func run(epoch: Int64, stop: StopFlag, verbose: Bool) {
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(sampleRate), channels: 1)
        let bytes = UInt32(chunkFrames * 4)
        // A short buffer (40 ms) keeps the stream's latency small. A longer one rode out longer
        // stalls under PulseAudio but made pipewire-pulse's beeps swing by ±65 ms; a stream that
        // does starve is noticed by the anchor and placed anew.
        var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: bytes * 8, prebuf: bytes, minreq: bytes, fragsize: UInt32.max)
        var error: Int32 = 0
        guard let stream = pa_simple_new(nil, "OpenReplayKit demo scene", PA_STREAM_PLAYBACK, nil, "beep",
                                         &spec, nil, &attributes, &error) else {
            StandardStreams.writeError("demo scene: no audio (\(String(cString: pa_strerror(error))))\n")
            return
        }
        defer { pa_simple_free(stream) }
        var chunk = [Float](repeating: 0, count: chunkFrames)
        var anchor = PlaybackAnchor(sampleRate: sampleRate)
        var written: Int64 = 0
        var restartsUnsaid = 0
        var lastSaid: Int64 = 0
        while !stop.isRaised {
            let latency = Int64(pa_simple_get_latency(stream, &error)) * 1000
            let restarts = anchor.restarts
            let start = anchor.timeOfSample(written, latency: latency, now: MonotonicClock.nanoseconds())
            if anchor.restarts > restarts && start >= epoch { restartsUnsaid += 1 }
            if verbose && restartsUnsaid > 0 && start - lastSaid >= 5_000_000_000 {
                // Said, because the beeps then stray for a while (see PlaybackAnchor): a lip-sync
                // check of a recording made meanwhile measures the scene as well as the recorder.
                // At most every 5 s: a busy machine starves the stream many times a second.
                StandardStreams.writeError("demo scene: the beep stream starved or its latency moved \(restartsUnsaid) "
                    + "time(s) up to \(Double(start) / 1e9) s; each time its beeps are placed anew\n")
                restartsUnsaid = 0
                lastSaid = start
            }
            for index in 0..<chunkFrames {
                let t = start + Int64(index) * 1_000_000_000 / Int64(sampleRate) - epoch
                let intoSecond = t >= 0 ? t % 1_000_000_000 : -1
                if intoSecond >= 0 && intoSecond < DemoScene.beepDuration {
                    chunk[index] = Float(0.5 * sin(2 * Double.pi * DemoScene.beepFrequency * Double(intoSecond) / 1e9))
                } else {
                    chunk[index] = 0
                }
            }
            written += Int64(chunkFrames)
            let status = chunk.withUnsafeBytes { pa_simple_write(stream, $0.baseAddress, $0.count, &error) }
            if status < 0 { return }
        }
    }
}

/// When each sample of a continuous playback stream is heard: sample n at anchor + n / rate.
///
/// The server's latency readings give the anchor only roughly: each has a few milliseconds of
/// jitter, and after a stall the server's estimate wanders by tens of milliseconds for
/// seconds while the sink itself keeps exact time. So the anchor is averaged from the readings
/// for two seconds and then held; only a starved stream (a sample written after its time)
/// or a sustained large disagreement (a new sink latency) starts the averaging over.
public struct PlaybackAnchor: Sendable {
    public let sampleRate: Int
    /// Audio written while the anchor is averaged, after the start or a restart.
    public static let settling: Int64 = 2_000_000_000
    /// A held anchor that readings disagree with by more than this, many times in a row, is
    /// restarted.
    public static let disagreement: Int64 = 40_000_000
    public static let disagreementsToRestart = 20

    /// When sample 0 is heard, on the monotonic clock; nil until the first reading.
    public private(set) var anchor: Int64?
    /// How many times the averaging started over, for tests.
    public private(set) var restarts = 0
    private var settlingFrom: Int64 = 0
    private var disagreements = 0

    public init(sampleRate: Int) { self.sampleRate = sampleRate }

    /// When sample `index` (the next one to be written) will be heard, given the stream's
    /// latency read at `now`.
    public mutating func timeOfSample(_ index: Int64, latency: Int64, now: Int64) -> Int64 {
        let measured = now + latency - duration(of: index)
        if let current = anchor, now >= current + duration(of: index) {
            restart(at: index)  // the sink has played past what was written: the stream starved
        }
        let averagedFor = duration(of: index - settlingFrom)
        switch anchor {
        case let current? where averagedFor >= Self.settling:
            disagreements = abs(measured - current) > Self.disagreement ? disagreements + 1 : 0
            if disagreements >= Self.disagreementsToRestart {
                restart(at: index)
                anchor = measured
            }
        case let current? where averagedFor >= Self.settling / 10:
            anchor = current + (measured - current) / 50
        default:
            anchor = measured  // the first readings jump while the server starts the sink
        }
        return (anchor ?? measured) + duration(of: index)
    }

    private mutating func restart(at index: Int64) {
        settlingFrom = index
        disagreements = 0
        restarts += 1
    }

    private func duration(of frames: Int64) -> Int64 { frames * 1_000_000_000 / Int64(sampleRate) }
}
