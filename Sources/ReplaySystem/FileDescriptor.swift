#if canImport(Glibc)
public import Glibc
#endif

/// A file descriptor this value owns: it is closed exactly once, by `close()` or when
/// the value goes away.
public struct FileDescriptor: ~Copyable {
    public let rawValue: Int32

    public init(owning rawValue: Int32) { self.rawValue = rawValue }

    /// Whether a read of `fd` now would not wait: something to read, or its end.
    public static func isReadable(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0
    }

    public static func open(_ path: String, flags: Int32, mode: mode_t = 0o600) throws(SystemError) -> FileDescriptor {
        FileDescriptor(owning: try syscall("open(\(path))") { Glibc.open(path, flags | O_CLOEXEC, mode) })
    }

    /// Writes all of `bytes`, looping over short writes.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            offset += try syscall("write") { Glibc.write(rawValue, rest.baseAddress, rest.count) }
        }
    }

    /// Reads up to `buffer.count` bytes; 0 means end of file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try syscall("read") { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    public func seek(to offset: Int64, whence: Int32 = SEEK_SET) throws(SystemError) -> Int64 {
        Int64(try syscall("lseek") { lseek(rawValue, off_t(offset), whence) })
    }

    public func truncate(to length: Int64) throws(SystemError) {
        try syscall("ftruncate") { ftruncate(rawValue, off_t(length)) }
    }

    public func sync() throws(SystemError) {
        try syscall("fdatasync") { fdatasync(rawValue) }
    }

    /// Writes all of `bytes` at `offset`, looping over short writes; the file position stays.
    public func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[done...])
            done += try syscall("pwrite") { pwrite(rawValue, rest.baseAddress, rest.count, off_t(offset) + off_t(done)) }
        }
    }

    /// Fills all of `buffer` from `offset`; throws EIO where the file ends first.
    public func readAll(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(SystemError) {
        var done = 0
        while done < buffer.count {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[done...])
            let read = try syscall("pread") { pread(rawValue, rest.baseAddress, rest.count, off_t(offset) + off_t(done)) }
            if read == 0 { throw SystemError(call: "pread (the file ends early)", errno: EIO) }
            done += read
        }
    }

    /// Gives up ownership: the caller closes the descriptor.
    public consuming func release() -> Int32 {
        let raw = rawValue
        discard self
        return raw
    }

    public consuming func close() {
        Glibc.close(rawValue)
        discard self
    }

    deinit { Glibc.close(rawValue) }
}
