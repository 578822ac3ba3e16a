import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif
import ReplaySystem

/// Where the muxer's bytes go: our own descriptor rather than FFmpeg's file protocol,
/// so we know exactly how much reached the disk and can cut a failed write back to the
/// end of the last whole fragment.
final class FileSink {
    private let fd: FileDescriptor
    private(set) var bytesWritten: Int64 = 0
    /// The end of the last complete fragment: the file is cut back here after a failed write.
    private(set) var committedLength: Int64 = 0
    private(set) var failure: SystemError?
    private(set) var context: UnsafeMutablePointer<AVIOContext>!

    init(path: String) throws(SystemError) {
        fd = try Self.openForWriting(path)
        let bufferSize = 256 * 1024
        guard let buffer = av_malloc(bufferSize) else { throw SystemError(call: "av_malloc", errno: ENOMEM) }
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        context = avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), Int32(bufferSize), 1, opaque, nil,
            { opaque, bytes, count in
                guard let opaque else { return CFFmpeg_AVERROR(EINVAL) }
                return Unmanaged<FileSink>.fromOpaque(opaque).takeUnretainedValue().write(UnsafeRawBufferPointer(start: bytes, count: Int(count)))
            },
            { opaque, offset, whence in
                guard let opaque else { return Int64(CFFmpeg_AVERROR(EINVAL)) }
                return Unmanaged<FileSink>.fromOpaque(opaque).takeUnretainedValue().seek(offset, whence: whence)
            })
    }

    /// `/proc/self/fd/N`, a movie this process was handed open (a capture process's), is
    /// duplicated, not reopened: a reopen goes by the file's own path, which a capture process
    /// may not open (its Landlock rules hide the store).
    private static func openForWriting(_ path: String) throws(SystemError) -> FileDescriptor {
        let handed = "/proc/self/fd/"
        guard path.hasPrefix(handed), let number = Int32(path.dropFirst(handed.count)) else {
            return try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600)
        }
        let copy = fcntl(number, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw SystemError(call: "dup(\(path))", errno: errno) }
        return FileDescriptor(owning: copy)
    }

    deinit {
        if context != nil {
            av_freep(&context.pointee.buffer)
            avio_context_free(&context)
        }
    }

    /// Pushes everything the muxer produced to the descriptor and, if that worked,
    /// marks the current end of file as a safe place to cut back to.
    func commit() {
        avio_flush(context)
        if failure == nil { committedLength = bytesWritten }
    }

    /// After a failure: drops a partly written fragment so the file stays playable.
    func cutBackToCommitted() {
        try? fd.truncate(to: committedLength)
    }

    func sync() { try? fd.sync() }

    private func write(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        if failure != nil { return CFFmpeg_AVERROR(EIO) }
        do {
            try fd.writeAll(bytes)
            bytesWritten = max(bytesWritten, (try? fd.seek(to: 0, whence: SEEK_CUR)) ?? bytesWritten + Int64(bytes.count))
            return Int32(bytes.count)
        } catch {
            failure = error
            return CFFmpeg_AVERROR(error.errno)
        }
    }

    private func seek(_ offset: Int64, whence: Int32) -> Int64 {
        if whence == AVSEEK_SIZE { return bytesWritten }
        do { return try fd.seek(to: offset, whence: whence & ~AVSEEK_FORCE) } catch { return Int64(CFFmpeg_AVERROR(error.errno)) }
    }
}
