import CFFmpeg
import Glibc
import ReplayMedia
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

/// A keyframe group a `ClipSpillFile` holds: where its records are. All that stays in memory
/// of a spilled second, whatever its packets.
struct SpilledGroup {
    let offset: Int64
    let length: Int

    /// One packet as a record: a fixed header (its timestamps, flags, track and decode time,
    /// little-endian) and then its bytes.
    static let headerSize = 48

    /// The records of `packets` (packet, track, decode time), one after the other.
    static func records(_ packets: [(packet: UnsafeMutablePointer<AVPacket>, stream: Int, time: MediaTime)]) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(packets.reduce(0) { $0 + headerSize + Int($1.packet.pointee.size) })
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        for (packet, stream, time) in packets {
            let size = Int(packet.pointee.size)
            put(packet.pointee.pts); put(packet.pointee.dts); put(packet.pointee.duration); put(time.nanoseconds)
            put(UInt32(size)); put(packet.pointee.flags); put(UInt32(stream)); put(UInt32(0))
            if let data = packet.pointee.data { bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: size)) }
        }
        return bytes
    }

    /// The group's packets read back, each a new packet with its track and decode time (the
    /// caller frees them), in the order they were written.
    func load(from file: ClipSpillFile) throws(CodecError) -> [(packet: UnsafeMutablePointer<AVPacket>, stream: Int, time: MediaTime)] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(length, 1), alignment: 16)
        defer { buffer.deallocate() }
        do { try file.read(at: offset, count: length, into: buffer.baseAddress!) } catch {
            throw CodecError(.muxerFailed, "cannot read the clip buffer back: \(error)")
        }
        let bytes = UnsafeRawBufferPointer(buffer)
        var packets: [(packet: UnsafeMutablePointer<AVPacket>, stream: Int, time: MediaTime)] = []
        var at = 0
        func take<T: FixedWidthInteger>(_ type: T.Type) -> T {
            defer { at += MemoryLayout<T>.size }
            return T(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: T.self))
        }
        while at < length {
            guard length - at >= Self.headerSize else {
                packets.forEach { var owned: UnsafeMutablePointer<AVPacket>? = $0.packet; av_packet_free(&owned) }
                throw CodecError(.muxerFailed, "the clip buffer's file does not read back as written")
            }
            let pts = take(Int64.self), dts = take(Int64.self), duration = take(Int64.self), time = take(Int64.self)
            let size = Int(take(UInt32.self)), flags = take(Int32.self), stream = Int(take(UInt32.self))
            _ = take(UInt32.self)
            guard size <= length - at, let packet = av_packet_alloc() else {
                packets.forEach { var owned: UnsafeMutablePointer<AVPacket>? = $0.packet; av_packet_free(&owned) }
                throw CodecError(.muxerFailed, "the clip buffer's file does not read back as written")
            }
            guard av_new_packet(packet, Int32(size)) >= 0 else {
                var owned: UnsafeMutablePointer<AVPacket>? = packet
                av_packet_free(&owned)
                packets.forEach { var owned: UnsafeMutablePointer<AVPacket>? = $0.packet; av_packet_free(&owned) }
                throw CodecError(.muxerFailed, "out of memory")
            }
            packet.pointee.data.update(from: bytes.baseAddress!.advanced(by: at).assumingMemoryBound(to: UInt8.self), count: size)
            at += size
            packet.pointee.pts = pts
            packet.pointee.dts = dts
            packet.pointee.duration = duration
            packet.pointee.flags = flags
            packets.append((packet, stream, MediaTime(nanoseconds: time)))
        }
        return packets
    }
}
