import CPulse
import CXCB
import Foundation
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
    public static func run(frameRate: Int = 30) throws {
        // Flashes fall on whole seconds of the monotonic clock. The first waits until the audio
        // stream has settled (its latency jumps while the server starts the sink), so that
        // even the first beep is where it belongs.
        let epoch = (MonotonicClock.nanoseconds() / 1_000_000_000 + 2) * 1_000_000_000
        let stop = StopFlag()
        Thread.detachNewThread { BeepPlayer.run(epoch: epoch, stop: stop) }
        try FlashPainter(frameRate: frameRate).run(epoch: epoch)
    }

    /// Only the scene's sound: a beep at each whole second of the monotonic clock from
    /// `epoch` on, until the process is killed. The Wayland desktop's scene pairs it with a
    /// picture client that flashes on the same instants.
    public static func playBeeps(epoch: Int64) -> Never {
        BeepPlayer.run(epoch: epoch, stop: StopFlag())
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

    static func run(epoch: Int64, stop: StopFlag) {
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(sampleRate), channels: 1)
        let bytes = UInt32(chunkFrames * 4)
        // A short buffer keeps the stream's latency small and its estimate tight.
        var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: bytes * 8, prebuf: bytes, minreq: bytes, fragsize: UInt32.max)
        var error: Int32 = 0
        guard let stream = pa_simple_new(nil, "OpenReplayKit demo scene", PA_STREAM_PLAYBACK, nil, "beep",
                                         &spec, nil, &attributes, &error) else {
            FileHandle.standardError.write(Data("demo scene: no audio (\(String(cString: pa_strerror(error))))\n".utf8))
            return
        }
        defer { pa_simple_free(stream) }
        var chunk = [Float](repeating: 0, count: chunkFrames)
        // Sample n is heard at anchor + n / rate. Each latency reading gives the anchor with a
        // few milliseconds of jitter, and the server's estimate settles over seconds, so the
        // anchor follows a slow moving average of the readings; a sustained disagreement (an
        // underrun, a new sink latency) restarts it.
        var written: Int64 = 0
        var anchor: Int64?
        var disagreements = 0
        while !stop.isRaised {
            let latency = Int64(pa_simple_get_latency(stream, &error)) * 1000
            let measured = MonotonicClock.nanoseconds() + latency - written * 1_000_000_000 / Int64(sampleRate)
            disagreements = anchor.map { abs(measured - $0) > 40_000_000 } == true ? disagreements + 1 : 0
            let settled: Int64
            if let current = anchor, written >= Int64(sampleRate / 5), disagreements <= 10 {
                settled = current + (measured - current) / 50
            } else {
                settled = measured
                disagreements = 0
            }
            anchor = settled
            let start = settled + written * 1_000_000_000 / Int64(sampleRate)
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
