#if canImport(Glibc)
import Glibc
#endif

/// Reading whole files and parts of them, in place of Foundation's `FileHandle`.
extension FileDescriptor {
    /// The size of the file it refers to.
    public func size() throws(SystemError) -> Int64 {
        var info = stat()
        try syscall("fstat") { fstat(rawValue, &info) }
        return Int64(info.st_size)
    }

    /// Up to `count` bytes from the file position on; fewer only where the file ends.
    public func read(upTo count: Int) throws(SystemError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var failure: SystemError?
        let done = bytes.withUnsafeMutableBytes { buffer in
            var done = 0
            do throws(SystemError) {
                while done < count {
                    let read = try self.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
                    if read == 0 { break }
                    done += read
                }
            } catch {
                failure = error
            }
            return done
        }
        if let failure { throw failure }
        bytes.removeLast(count - done)
        return bytes
    }

    /// Exactly `count` bytes at `offset`; nil where the file ends first or cannot be read.
    public func bytes(count: Int, at offset: Int64) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let complete = bytes.withUnsafeMutableBytes { buffer in
            do {
                try readAll(into: buffer, at: offset)
                return true
            } catch {
                return false
            }
        }
        return complete ? bytes : nil
    }
}

/// Facts of a file by its path, without opening it.
public enum FileFacts {
    /// Its size in bytes, following a symbolic link; nil where there is nothing to stat.
    public static func size(atPath path: String) -> Int64? {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : nil
    }
}
