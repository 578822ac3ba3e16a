#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ReplaySystem

/// What an extension's sandbox holds, walked in /proc, for the watchdog: every process (the
/// children of every thread, so a child forked from a thread counts too) and its anonymous
/// memory, resident or swapped (RssAnon + VmSwap: what iOS's phys_footprint counts and no
/// limit can reclaim); the memfds they hold open, but for those replayd lent (shared
/// surfaces, which are replayd's memory), and those they map after closing them; and what is
/// stored in the sandbox's tmpfs. Clean file-backed pages (library code, shared and dropped
/// whenever the kernel likes) do not count.
enum SandboxUsage {
    /// - Parameters:
    ///   - bwrap: the sandbox's outer process (not counted itself); everything below it is.
    ///   - storageRoot: the sandbox's init, whose root shows its tmpfs; nil once bwrap has exited
    ///     (the pid may then be another process's).
    ///   - processLimit: the walk stops once past it (a fork bomb is over the limit either way).
    static func measure(bwrap: Int32, storageRoot: Int32?, lent: Set<FileIdentity>, processLimit: Int) -> ExtensionUsage {
        var bytes = 0, processes = 0
        var memfds = Set<FileIdentity>()
        var pending = [bwrap]
        var seen = Set<Int32>()
        while let pid = pending.popLast(), processes <= processLimit {
            guard seen.insert(pid).inserted else { continue }
            if pid != bwrap {
                processes += 1
                bytes += anonymousBytes(pid) + memfdBytes(pid, excluding: lent, counted: &memfds)
                    + mappedMemfdBytes(pid, excluding: lent, counted: &memfds)
            }
            pending += children(of: pid)
        }
        return ExtensionUsage(bytes: bytes + (storageRoot.map(storedBytes(root:)) ?? 0), processes: processes)
    }

    /// Bytes stored in the sandbox's writable tmpfs, seen through its init's root.
    private static func storedBytes(root pid: Int32) -> Int {
        ["/tmp", "/dev/shm"].reduce(0) { total, path in
            var info = statvfs()
            guard statvfs("/proc/\(pid)/root\(path)", &info) == 0 else { return total }
            return total + Int(info.f_blocks - info.f_bfree) * Int(info.f_frsize)
        }
    }

    /// Children of every thread: a child's parent is the thread that forked it.
    private static func children(of pid: Int32) -> [Int32] {
        ProcFS.entries(of: "/proc/\(pid)/task").flatMap { task -> [Int32] in
            guard let text = ProcFS.text("/proc/\(pid)/task/\(task)/children") else { return [] }
            return text.split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
    }

    /// The memfds `pid` holds open that are not in `lent` or `counted`, by their allocated size.
    private static func memfdBytes(_ pid: Int32, excluding lent: Set<FileIdentity>, counted: inout Set<FileIdentity>) -> Int {
        var total = 0
        for fd in ProcFS.entries(of: "/proc/\(pid)/fd") {
            let link = "/proc/\(pid)/fd/\(fd)"
            var target = [UInt8](repeating: 0, count: 7)
            guard readlink(link, &target, 7) == 7, target == Array("/memfd:".utf8) else { continue }
            guard let (identity, bytes) = FileIdentity.allocation(path: link), !lent.contains(identity),
                  counted.insert(identity).inserted else { continue }
            total += bytes
        }
        return total
    }

    /// Memfds `pid` maps but no longer holds open (not in `lent` or `counted`), by what of
    /// them is resident in its mappings. smaps is read only when there is such a mapping.
    private static func mappedMemfdBytes(_ pid: Int32, excluding lent: Set<FileIdentity>, counted: inout Set<FileIdentity>) -> Int {
        guard let maps = ProcFS.text("/proc/\(pid)/maps") else { return 0 }
        let unknown = Set(maps.split(separator: "\n").compactMap { line -> FileIdentity? in
            guard line.contains(" /memfd:"), let identity = FileIdentity(mapsLine: line) else { return nil }
            return lent.contains(identity) || counted.contains(identity) ? nil : identity
        })
        guard !unknown.isEmpty, let smaps = ProcFS.text("/proc/\(pid)/smaps") else { return 0 }
        var total = 0
        var current: FileIdentity?
        for line in smaps.split(separator: "\n") {
            if line.prefix(while: { $0 != " " }).contains("-") {
                // A mapping's first line ("start-end perms …"); its fields ("Rss:    12 kB") follow.
                current = FileIdentity(mapsLine: line).flatMap { unknown.contains($0) ? $0 : nil }
            } else if current != nil, line.hasPrefix("Rss:") {
                total += kilobytes(line) * 1024
            }
        }
        counted.formUnion(unknown)
        return total
    }

    private static func anonymousBytes(_ pid: Int32) -> Int {
        guard let status = ProcFS.text("/proc/\(pid)/status") else { return 0 }
        let lines = status.split(separator: "\n").filter { $0.hasPrefix("RssAnon:") || $0.hasPrefix("VmSwap:") }
        return lines.reduce(0) { $0 + kilobytes($1) } * 1024
    }

    /// The number in a "Name:   12 kB" line.
    private static func kilobytes(_ line: Substring) -> Int {
        Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0
    }
}
