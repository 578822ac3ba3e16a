import CShims
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A pipe whose ends are close-on-exec from the start: only the child it is handed to gets one.
public enum Pipe {
    public static func make() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        _ = try syscall("pipe2") { CShims_pipe_cloexec(&fds) }
        return (fds[0], fds[1])
    }

    /// The first line written on `fd` (without its newline), handed to `then` once it came;
    /// nil if the writer closed first or said nothing within `seconds`. No thread waits
    /// meanwhile: a `ReadableWatch` reads what comes, and the time limit is a timer of `timers`.
    /// `then` runs once, on the watch's queue; `fd` stays open, the caller's.
    public static func readLine(_ fd: Int32, within seconds: Int64, on timers: any Timers,
                                then: @escaping @Sendable (String?) -> Void) {
        let reader = LineReader()
        let limit = LineTimeLimit()
        let watch = ReadableWatch(descriptor: fd, label: "replay.pipe-line", whenCancelled: {
            limit.end()
            then(reader.line)
        }) { watch in
            if reader.readSome(fd) { watch.cancel() }
        }
        limit.arm(timers.after(Double(seconds)) { watch.cancel() })
    }
}

/// `Pipe.readLine`'s time limit, cancelled when the line (or the writer's close) comes first,
/// so that its timer does not live out the limit for nothing.
private final class LineTimeLimit: Sendable {
    private let state = Mutex<(ended: Bool, timer: (any TimerControl)?)>((false, nil))

    func arm(_ timer: any TimerControl) {
        let ended = state.withLock { state in
            if !state.ended { state.timer = timer }
            return state.ended
        }
        if ended { timer.cancel() }
    }

    func end() {
        state.withLock { state in
            state.ended = true
            return state.timer.take()
        }?.cancel()
    }
}

/// What the watching `Pipe.readLine` has read so far.
private final class LineReader: Sendable {
    private let bytes = Mutex<[UInt8]>([])

    /// The line, once its newline came; nil before, and if the writer closed first.
    var line: String? {
        bytes.withLock { bytes in
            bytes.firstIndex(of: UInt8(ascii: "\n")).map { String(decoding: bytes[..<$0], as: UTF8.self) }
        }
    }

    /// Reads what is there; true once there is no more to wait for: a whole line, or the
    /// writer's close (or a read error).
    func readSome(_ fd: Int32) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 256)
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 && (errno == EINTR || errno == EAGAIN) { return false }
        guard count > 0 else { return true }
        return bytes.withLock { bytes in
            bytes += chunk[..<count]
            return bytes.contains(UInt8(ascii: "\n"))
        }
    }
}
