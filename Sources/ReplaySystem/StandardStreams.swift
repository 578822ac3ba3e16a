#if canImport(Glibc)
import Glibc
#endif

/// The standard streams through write(2) and read(2), in place of Foundation's `FileHandle`.
public enum StandardStreams {
    /// Writes all of `text` to standard error; a stream that is gone takes nothing.
    public static func writeError(_ text: String) { writeAll(STDERR_FILENO, Array(text.utf8)) }

    /// Writes all of `bytes` to standard output.
    public static func writeOutput(_ bytes: some Collection<UInt8>) { writeAll(STDOUT_FILENO, Array(bytes)) }

    /// Standard input up to its end.
    public static func readInput() -> [UInt8] {
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(STDIN_FILENO, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return data }
            data.append(contentsOf: chunk[..<count])
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}
