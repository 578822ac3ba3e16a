import CShims
#if canImport(Glibc)
import Glibc
#endif

/// What a file written once and read back seldom (a long clip buffer's spill file) needs:
/// its disk space and its page cache given back as it goes.
extension FileDescriptor {
    /// A new file with no name in `directory` (O_TMPFILE): nobody can open it, and its space
    /// goes back when its last descriptor closes, however its holder ends.
    public static func unnamedFile(in directory: String) throws(SystemError) -> FileDescriptor {
        FileDescriptor(owning: try syscall("open(\(directory), O_TMPFILE)") { CShims_open_unnamed(directory) })
    }

    /// Gives back the disk space of `length` bytes at `offset`, the file's size kept (reads
    /// there give zeros). Throws where the file system cannot (EOPNOTSUPP).
    public func punchHole(at offset: Int64, length: Int64) throws(SystemError) {
        try syscall("fallocate (punch a hole)") { CShims_punch_hole(rawValue, offset, length) }
    }

    /// Starts writing the range back to disk, without waiting, and drops an earlier range,
    /// written back meanwhile, from the page cache: for a file written once and read back
    /// seldom, whose pages would otherwise stay cached.
    public func writeBack(_ range: Range<Int64>, dropping written: Range<Int64>?) {
        _ = CShims_start_writeback(rawValue, range.lowerBound, Int64(range.count))
        if let written { _ = posix_fadvise(rawValue, off_t(written.lowerBound), off_t(written.count), POSIX_FADV_DONTNEED) }
    }
}
