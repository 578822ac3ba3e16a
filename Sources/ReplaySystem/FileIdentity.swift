#if canImport(Glibc)
public import Glibc
#endif

/// A file as the kernel knows it (device and inode), whatever path, mount or descriptor
/// shows it: a program bound over another's path, or a copy, is another file.
public struct FileIdentity: Codable, Hashable, Sendable {
    public let device: UInt64
    public let inode: UInt64

    public init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    /// The file at `path` (links followed); nil when it cannot be read.
    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The file at `path` and the bytes it occupies (its allocated blocks, not its length).
    public static func allocation(path: String) -> (identity: FileIdentity, bytes: Int)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (FileIdentity(info), Int(info.st_blocks) * 512)
    }

    /// The file a descriptor of this process names.
    public init?(descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        self.init(info)
    }

    /// From a /proc/PID/maps (or smaps header) line: `start-end perms offset MAJOR:MINOR inode path`.
    public init?(mapsLine line: Substring) {
        let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard fields.count >= 5, fields[0].contains("-"), let inode = UInt64(fields[4]), inode != 0 else { return nil }
        let numbers = fields[3].split(separator: ":").compactMap { UInt64($0, radix: 16) }
        guard numbers.count == 2 else { return nil }
        let (major, minor) = (numbers[0], numbers[1])
        // glibc's makedev: how st_dev encodes the pair.
        device = (minor & 0xff) | ((major & 0xfff) << 8) | ((minor & ~0xff) << 12) | ((major & ~0xfff) << 32)
        self.inode = inode
    }
}
