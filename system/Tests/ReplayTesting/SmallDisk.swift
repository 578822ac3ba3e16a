public import Foundation

/// A tmpfs of a few megabytes (mounting needs root), for a store that fills within a take.
public final class SmallDisk {
    public let mountPoint: URL

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(megabytes: Int) throws {
        mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("ork-disk-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let mount = try Command.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", mountPoint.path])
        guard mount.status == 0 else {
            try? FileManager.default.removeItem(at: mountPoint)
            throw Failure(description: "a small tmpfs needs root to mount: \(mount)")
        }
    }

    /// Unmounts it and removes its mount point.
    public func remove() {
        _ = try? Command.run("/bin/umount", [mountPoint.path])
        try? FileManager.default.removeItem(at: mountPoint)
    }

    public var freeBytes: Int {
        (try? FileManager.default.attributesOfFileSystem(forPath: mountPoint.path)[.systemFreeSize] as? NSNumber)?.intValue ?? 0
    }

    /// Writes a file that leaves about `bytes` free.
    public func fill(leaving bytes: Int) throws {
        try Data(count: max(freeBytes - bytes, 0)).write(to: mountPoint.appendingPathComponent("filler"))
    }
}
