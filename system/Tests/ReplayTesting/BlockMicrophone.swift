public import Foundation
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// A microphone that delivers its sound in large blocks, as some do (a network or Bluetooth
/// microphone, a source with a deep buffer): a PulseAudio `module-pipe-source` fed from a FIFO
/// with `block` seconds of 48 kHz stereo at a time, each the `block` seconds that just ended.
/// What it "hears" is the demo scene's beep: a 50 ms 1 kHz tone at every whole second of the
/// monotonic clock, where the scene flashes, so lip sync can be measured on its track.
public final class BlockMicrophone: @unchecked Sendable {
    // @unchecked: the writer thread owns `fifo`; `stop` is a flag and a semaphore.
    public let sourceName: String
    private let fifo: Int32
    private let stopFlag = StopFlag()
    private let done = DispatchSemaphore(value: 0)
    private let server: String
    private let module: String

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Loads the source into the audio server `server` (`unix:PATH`) and starts feeding it.
    public init(server: String, directory: URL, name: String = "block_mic", block: Double = 2) throws {
        sourceName = name
        self.server = server
        let path = directory.appendingPathComponent("\(name).fifo").path
        let load = try Command.run("/usr/bin/pactl", ["--server=\(server)", "load-module", "module-pipe-source",
                                                       "source_name=\(name)", "file=\(path)", "format=float32le", "rate=48000",
                                                       "channels=2"])
        guard load.status == 0 else { throw Failure(description: "cannot load module-pipe-source: \(load)") }
        module = load.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // Opened for reading too: with a reader of our own, a write never raises SIGPIPE (which
        // would end the test process) once the server has closed its end; non-blocking, so the
        // writer can stop while the server does not read.
        fifo = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fifo >= 0 else { throw Failure(description: "cannot open \(path): errno \(errno)") }
        // Room for a whole block, so the server takes each one at once, as a device hands over a
        // block (a null sink's monitor posts its 2 s render whole); through the default 64 KiB the
        // server would read a block in pieces over a few milliseconds.
        let frames = Int(block * 48_000)
        guard fcntl(fifo, 1031 /* F_SETPIPE_SZ, a GNU macro Swift does not see */, Int32(frames * 8 + 4096)) >= frames * 8 else {
            close(fifo)
            throw Failure(description: "cannot make \(path) hold a \(block) s block: errno \(errno)")
        }
        let blockNanoseconds = Int64(block * 1e9)
        Thread.detachNewThread { [self] in
            // Block k holds the sound of [start + k·block, start + (k+1)·block) and is written as it ends.
            var blockStart = MonotonicClock.nanoseconds() / 1_000_000_000 * 1_000_000_000
            var samples = [Float](repeating: 0, count: frames * 2)
            while !stopFlag.isRaised {
                for frame in 0..<frames {
                    let time = blockStart + Int64(frame) * 1_000_000_000 / 48_000
                    let intoSecond = time % 1_000_000_000
                    let value = intoSecond < 50_000_000 ? Float(0.5 * sin(2 * Double.pi * 1000 * Double(intoSecond) / 1e9)) : 0
                    samples[2 * frame] = value
                    samples[2 * frame + 1] = value
                }
                MonotonicClock.sleep(until: blockStart + blockNanoseconds)
                let written = samples.withUnsafeBytes { bytes -> Bool in
                    var offset = 0
                    while offset < bytes.count {
                        if stopFlag.isRaised { return false }
                        let count = write(fifo, bytes.baseAddress! + offset, bytes.count - offset)
                        if count > 0 {
                            offset += count
                        } else if count < 0 && errno == EAGAIN && offset == 0 {
                            return true  // not recorded now: this block is lost, as above
                        } else if count < 0 && (errno == EAGAIN || errno == EINTR) {
                            var descriptor = pollfd(fd: fifo, events: Int16(POLLOUT), revents: 0)
                            _ = poll(&descriptor, 1, 100)
                        } else {
                            return false
                        }
                    }
                    return true
                }
                if !written { break }
                // A microphone nobody records keeps nothing: a block the server left untouched
                // (a server that reads the pipe only while the source is recorded) is thrown
                // away, so a recording starts with fresh sound, not a stale block from before
                // it. A block the server has begun to read is its own: taking the rest would
                // leave it a head torn off its block (seen on a busy machine, where 10 ms was
                // not enough for the server to read 2 s), which no microphone delivers.
                MonotonicClock.sleep(until: blockStart + blockNanoseconds + 100_000_000)
                var unread: Int32 = 0
                if ioctl(fifo, UInt(FIONREAD), &unread) == 0, unread == Int32(frames * 8) {
                    var scrap = [UInt8](repeating: 0, count: Int(unread))
                    _ = read(fifo, &scrap, scrap.count)
                }
                blockStart += blockNanoseconds
            }
            done.signal()
        }
    }

    /// Stops feeding and unloads the source.
    public func stop() {
        stopFlag.raise()
        _ = done.wait(timeout: .now() + 5)
        close(fifo)
        _ = try? Command.run("/usr/bin/pactl", ["--server=\(server)", "unload-module", module])
    }
}
