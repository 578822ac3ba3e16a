import CShims
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

    /// The first line written on `fd` (without its newline), read as it comes; nil if the
    /// writer closed first or said nothing within `seconds`.
    public static func readLine(_ fd: Int32, within seconds: Int64) -> String? {
        var bytes: [UInt8] = []
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = MonotonicClock.nanoseconds() + seconds * 1_000_000_000
        while !bytes.contains(UInt8(ascii: "\n")) {
            let now = MonotonicClock.nanoseconds()
            guard now < deadline, poll(&entry, 1, Int32((deadline - now) / 1_000_000)) > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 256)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return nil }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }
}
