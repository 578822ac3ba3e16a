import FoundationEssentials
import ReplayCaptureModel
import ReplayIPC
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// What an extension's sandbox holds, walked in /proc, for the watchdog: every process (the
/// children of every thread, so a child forked from a thread counts too) and its anonymous
/// memory, resident or swapped (RssAnon + VmSwap: what iOS's phys_footprint counts and no
/// limit can reclaim); the memfds they hold open, but for those replayd lent (shared
/// surfaces, which are replayd's memory); the shared memory they map (memfds closed after
/// mapping, /dev/zero mapped shared); what their sockets hold unread or unsent; and what is
/// stored in the sandbox's tmpfs. Clean file-backed pages (library code, shared and dropped
/// whenever the kernel likes) do not count, nor do dirty pages of files on disk, which the
/// kernel writes back.
enum SandboxUsage {
    /// - Parameters:
    ///   - bwrap: the sandbox's outer process (not counted itself); everything below it is.
    ///   - storageRoot: the sandbox's init, whose root shows its tmpfs; nil once bwrap has exited
    ///     (the pid may then be another process's).
    ///   - processLimit: the walk stops once past it (a fork bomb is over the limit either way).
    ///   - socketDiag: a sock_diag socket of the sandbox's own network namespace, if it has one.
    static func measure(bwrap: Int32, storageRoot: Int32?, lent: Set<FileIdentity>, processLimit: Int,
                        socketDiag: Int32? = nil) -> ExtensionUsage {
        var pids: [Int32] = []
        var pending = [bwrap]
        var seen = Set<Int32>()
        let namespace = storageRoot.flatMap(pidNamespace(of:))
        while let pid = pending.popLast(), pids.count <= processLimit {
            guard seen.insert(pid).inserted else { continue }
            if pid != bwrap {
                // A child that exited between two reads may have left its number to another
                // process of the machine (a fork bomb makes that likely): only the sandbox's
                // own pid namespace counts, nor are an outsider's children walked.
                guard let namespace, pidNamespace(of: pid) == namespace else { continue }
                pids.append(pid)
            }
            pending += children(of: pid)
        }
        var anonymous = 0, held = 0
        var memfds = Set<FileIdentity>(), sockets = Set<UInt64>()
        for pid in pids {
            anonymous += anonymousBytes(pid)
            held += descriptorBytes(pid, excluding: lent, memfds: &memfds, sockets: &sockets)
        }
        // After every descriptor: a memfd held open by one process and mapped by another is
        // counted once, by its size.
        var shared: [SharedMapping: Int] = [:]
        for pid in pids { sharedMappings(pid, excluding: lent.union(memfds), into: &shared) }
        let parts = [("anonymous", anonymous), ("memfds", held), ("shared", shared.values.reduce(0, +)),
                     ("sockets", socketBytes(sockets, diag: socketDiag)), ("tmpfs", storageRoot.map(storedBytes(root:)) ?? 0)]
        let breakdown = parts.filter { $0.1 > 0 }.map { "\($0.0) \(BroadcastLimits.mebibytes($0.1))" }.joined(separator: ", ") + " in \(pids.count) processes"
        return ExtensionUsage(bytes: parts.reduce(0) { $0 + $1.1 }, processes: pids.count, breakdown: breakdown)
    }

    /// The pid namespace `pid` lives in ("pid:[4026532184]"), nil once it has gone.
    private static func pidNamespace(of pid: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = readlink("/proc/\(pid)/ns/pid", &buffer, buffer.count)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
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
            return text.split(separator: " ").compactMap { Int32($0.trimmingWhitespace()) }
        }
    }

    /// The memfds `pid` holds open that are not in `lent` or `memfds`, by their allocated size;
    /// the inodes of its sockets go into `sockets`.
    private static func descriptorBytes(_ pid: Int32, excluding lent: Set<FileIdentity>, memfds: inout Set<FileIdentity>,
                                        sockets: inout Set<UInt64>) -> Int {
        var total = 0
        for fd in ProcFS.entries(of: "/proc/\(pid)/fd") {
            let link = "/proc/\(pid)/fd/\(fd)"
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = readlink(link, &buffer, buffer.count)
            guard count > 0 else { continue }
            let target = buffer[..<count]
            if target.starts(with: "socket:[".utf8) {
                // "socket:[12345]"
                if let inode = UInt64(String(decoding: target.dropFirst(8).dropLast(), as: UTF8.self)) { sockets.insert(inode) }
                continue
            }
            guard target.starts(with: "/memfd:".utf8), let (identity, bytes) = FileIdentity.allocation(path: link),
                  !lent.contains(identity), memfds.insert(identity).inserted else { continue }
            total += bytes
        }
        return total
    }

    /// What the sockets hold in the kernel. A socket sent over another and closed is held by
    /// no process, so it is not found here; the open-file limit bounds how many can be in
    /// flight, not what they hold (docs/security.md lists it as not counted).
    private static func socketBytes(_ inodes: Set<UInt64>, diag: Int32?) -> Int {
        guard !inodes.isEmpty, let memory = SocketMemory.byInode(diag: diag) else { return 0 }
        return inodes.reduce(0) { $0 + (memory[$1] ?? 0) }
    }

    /// One part of one shared object: a child forked with a mapping, or another process
    /// mapping the same part, shows the same pages, counted once; different parts count each.
    struct SharedMapping: Hashable {
        var identity: FileIdentity
        var offset: Substring
        var length: UInt64
    }

    /// Shared memory `pid` maps that nobody holds open (memfds closed after mapping, /dev/zero
    /// mapped shared, whose pages no RssAnon shows), but for `excluded` (lent, or counted by
    /// size): what of each is resident or swapped. smaps is read only when there is such a mapping.
    private static func sharedMappings(_ pid: Int32, excluding excluded: Set<FileIdentity>, into shared: inout [SharedMapping: Int]) {
        guard let maps = ProcFS.text("/proc/\(pid)/maps") else { return }
        func mapping(_ line: Substring) -> SharedMapping? {
            guard line.contains(" /memfd:") || line.hasSuffix(" /dev/zero (deleted)") || line.contains(" /SYSV"),
                  let identity = FileIdentity(mapsLine: line), !excluded.contains(identity) else { return nil }
            let fields = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true)
            let bounds = fields[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
            guard bounds.count == 2 else { return nil }
            return SharedMapping(identity: identity, offset: fields[2], length: bounds[1] &- bounds[0])
        }
        guard maps.split(separator: "\n").contains(where: { mapping($0) != nil }),
              let smaps = ProcFS.text("/proc/\(pid)/smaps") else { return }
        var current: SharedMapping?
        var found: [SharedMapping: Int] = [:]
        for line in smaps.split(separator: "\n") {
            if line.prefix(while: { $0 != " " }).contains("-") {
                // A mapping's first line ("start-end perms …"); its fields ("Rss:    12 kB") follow.
                current = mapping(line)
            } else if let key = current, line.hasPrefix("Rss:") || line.hasPrefix("Swap:") {
                found[key, default: 0] += kilobytes(line) * 1024
            }
        }
        shared.merge(found) { max($0, $1) }
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
