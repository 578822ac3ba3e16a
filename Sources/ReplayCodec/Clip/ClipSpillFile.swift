import CFFmpeg
import Glibc
import ReplaySystem

/// Where a long clip buffer keeps its packets' bytes: a file nobody can open by name (replayd
/// makes it unlinked in the store and hands it over), written a keyframe group at a time as
/// each completes. The file only grows at its end; the space of groups the ring has let go
/// is punched out, so the disk holds what the ring holds, and what was written is dropped
/// from the page cache once written back, so memory holds none of it.
final class ClipSpillFile {
    private let descriptor: FileDescriptor
    /// Where the next group goes.
    private(set) var end: Int64 = 0
    /// Everything before this has been punched out.
    private var released: Int64 = 0
    /// The last group written, dropped from the page cache at the next write (written back by then).
    private var lastWritten: Range<Int64>?
    /// False once the file system refused to punch (then the file keeps what was written).
    private(set) var punches = true

    /// `/proc/self/fd/N`, a file this process was handed (a capture process's), is duplicated;
    /// any other path is created and unlinked at once (tests, and a process of one's own).
    init(path: String) throws(SystemError) {
        let handed = "/proc/self/fd/"
        if path.hasPrefix(handed), let number = Int32(path.dropFirst(handed.count)) {
            let copy = fcntl(number, F_DUPFD_CLOEXEC, 0)
            guard copy >= 0 else { throw SystemError(call: "dup(\(path))", errno: errno) }
            descriptor = FileDescriptor(owning: copy)
        } else {
            descriptor = try FileDescriptor.open(path, flags: O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
            unlink(path)
        }
    }

    /// Appends `bytes` at the end; returns where they begin.
    func append(_ bytes: UnsafeRawBufferPointer) throws(SystemError) -> Int64 {
        let start = end
        try descriptor.writeAll(bytes, at: start)
        end += Int64(bytes.count)
        // The page cache would otherwise keep every group written: writeback starts now, and
        // the group before, written back meanwhile, leaves the cache.
        descriptor.writeBack(start..<end, dropping: lastWritten)
        lastWritten = start..<end
        return start
    }

    /// Reads `count` bytes at `offset` into `buffer`.
    func read(at offset: Int64, count: Int, into buffer: UnsafeMutableRawPointer) throws(SystemError) {
        try descriptor.readAll(into: UnsafeMutableRawBufferPointer(start: buffer, count: count), at: offset)
    }

    /// Gives back the disk space of everything before `offset`: the ring has let it go.
    func release(before offset: Int64) {
        guard punches, offset > released else { return }
        do {
            try descriptor.punchHole(at: released, length: offset - released)
            released = offset
        } catch {
            punches = false  // the file keeps what was written; saves read as before
        }
    }
}

/// A packet whose bytes are in a `ClipSpillFile`: what remains in memory is this.
struct SpilledPacket {
    let offset: Int64
    let size: Int32
    let pts: Int64
    let dts: Int64
    let duration: Int64
    let flags: Int32

    /// A new packet with the bytes read back; the caller frees it.
    func load(from file: ClipSpillFile) throws(CodecError) -> UnsafeMutablePointer<AVPacket> {
        guard let packet = av_packet_alloc() else { throw CodecError(.muxerFailed, "out of memory") }
        var failure: CodecError?
        if av_new_packet(packet, size) < 0 {
            failure = CodecError(.muxerFailed, "out of memory")
        } else {
            do { try file.read(at: offset, count: Int(size), into: packet.pointee.data) } catch {
                failure = CodecError(.muxerFailed, "cannot read the clip buffer back: \(error)")
            }
        }
        if let failure {
            var owned: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&owned)
            throw failure
        }
        packet.pointee.pts = pts
        packet.pointee.dts = dts
        packet.pointee.duration = duration
        packet.pointee.flags = flags
        return packet
    }
}
