#if canImport(Glibc)
public import Glibc
#endif

/// A file written from its start, in place of Foundation's `FileHandle(forWritingAtPath:)`:
/// made (or emptied) when opened, closed once, by `close()` or when it goes away.
public final class OutputFile {
    private var fd: Int32

    /// Makes the file at `path`, or empties the one there, with `mode` for a new one.
    public init(creating path: String, mode: mode_t = 0o644) throws(SystemError) {
        fd = try syscall("open(\(path))") { open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) }
    }

    /// Writes all of `bytes`, looping over short writes.
    public func write(_ bytes: some Collection<UInt8>) throws(SystemError) {
        let bytes = Array(bytes)
        var offset = 0
        while offset < bytes.count {
            let rest = offset
            offset += try syscall("write") { bytes[rest...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } }
        }
    }

    /// Waits until what was written is on the disk.
    public func synchronize() throws(SystemError) { try syscall("fsync") { fsync(fd) } }

    public func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    deinit { close() }
}
