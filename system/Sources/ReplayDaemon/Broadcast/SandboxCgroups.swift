import FoundationEssentials
import ReplayCaptureModel
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// cgroup v2 limits for the extensions' sandboxes, where the kernel offers them: each sandbox
/// in a cgroup of its own below replayd's, with `memory.max` 50 MiB (no swap) and `pids.max`
/// 64, so the kernel counts every page it holds (socket buffers, files in flight and tmpfs
/// included) and kills at the limit, where the walk (`SandboxUsage`) only looks every 50 ms.
/// Offered when replayd's own cgroup is on the unified hierarchy with the memory and pids
/// controllers and replayd may write there (systemd's `Delegate=yes`); replayd then moves
/// itself into a leaf, `replayd`, since a cgroup that hands controllers to its children may
/// hold no process itself.
final class SandboxCgroups: Sendable {
    enum Availability {
        case offered(SandboxCgroups)
        /// Why not, in words for the log and `replay broadcast status`.
        case notOffered(String)
    }

    /// replayd's own cgroup folder, under which each sandbox gets one.
    let base: String

    private init(base: String) { self.base = base }

    /// Looks at this process's cgroup and sets the hierarchy up if it can. `root` is `/` but
    /// in tests, which give a folder that looks like /proc and /sys.
    static func detect(root: String = "/", pid: Int32 = getpid()) -> Availability {
        let prefix = root.hasSuffix("/") ? String(root.dropLast()) : root
        guard let membership = try? String(contentsOfFile: prefix + "/proc/self/cgroup", encoding: .utf8),
              let line = membership.split(separator: "\n").first(where: { $0.hasPrefix("0::") }) else {
            return .notOffered("this kernel offers no cgroup v2 hierarchy")
        }
        let path = String(line.dropFirst(3))
        guard let mount = unifiedMountPoint(mountinfo: prefix + "/proc/self/mountinfo") else {
            return .notOffered("cgroup v2 is not mounted")
        }
        let own = prefix + mount + (path == "/" ? "" : path)
        let controllers = ((try? String(contentsOfFile: own + "/cgroup.controllers", encoding: .utf8)) ?? "")
            .split(whereSeparator: \.isWhitespace)
        guard controllers.contains("memory"), controllers.contains("pids") else {
            let offered = controllers.isEmpty ? "none" : controllers.joined(separator: ", ")
            return .notOffered("replayd's cgroup v2 (\(path)) offers no memory and pids controllers (offered: \(offered)); "
                + "on this machine memory is most likely still a cgroup v1 controller")
        }
        guard access(own + "/cgroup.subtree_control", W_OK) == 0 else {
            return .notOffered("replayd's cgroup (\(path)) is not delegated to it: its systemd unit needs Delegate=yes")
        }
        // Into a leaf of its own first: a cgroup with controllers enabled for its children holds no process.
        let leaf = own + "/replayd"
        guard mkdir(leaf, 0o755) == 0 || errno == EEXIST, write("\(pid)", to: leaf + "/cgroup.procs"),
              write("+memory +pids", to: own + "/cgroup.subtree_control") else {
            return .notOffered("cannot set up replayd's cgroup (\(path)): \(String(cString: strerror(errno)))")
        }
        return .offered(SandboxCgroups(base: own))
    }

    /// Where the unified hierarchy is mounted, from mountinfo (the field after " - " names the type).
    static func unifiedMountPoint(mountinfo path: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let halves = line.components(separatedBy: " - ")
            guard halves.count == 2, halves[1].hasPrefix("cgroup2 ") else { continue }
            let fields = halves[0].split(separator: " ")
            if fields.count >= 5 { return String(fields[4]) }
        }
        return nil
    }

    /// A cgroup for one sandbox, holding `pids` (bwrap and the sandbox's init, before the
    /// extension starts, so that everything it forks is born inside).
    func confine(_ pids: [Int32], name: String, memoryLimit: Int, processLimit: Int, timers: any Timers) -> SandboxCgroup? {
        let path = base + "/" + name
        guard mkdir(path, 0o755) == 0 else { return nil }
        let group = SandboxCgroup(path: path, timers: timers)
        // No swap either, where swap is accounted (the file exists only then).
        _ = Self.write("0", to: path + "/memory.swap.max")
        let limits = Self.write("\(memoryLimit)", to: path + "/memory.max") && Self.write("\(processLimit)", to: path + "/pids.max")
        guard limits, pids.allSatisfy({ Self.write("\($0)", to: path + "/cgroup.procs") }) else {
            group.remove()
            return nil
        }
        return group
    }

    /// Writes `text` into a control file, as one write(2). (O_CREAT opens a control file as it
    /// is, and makes no new one on cgroupfs; a test's plain folder gets the file.)
    static func write(_ text: String, to path: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        return Glibc.write(fd, bytes, bytes.count) == bytes.count
    }
}

/// One sandbox's cgroup.
struct SandboxCgroup: Sendable {
    let path: String
    /// What the retries of its removal wait on.
    let timers: any Timers

    /// Whether the kernel killed something in it at `memory.max`.
    var killedAtMemoryLimit: Bool {
        guard let events = try? String(contentsOfFile: path + "/memory.events", encoding: .utf8) else { return false }
        return events.split(separator: "\n").contains { line in
            line.hasPrefix("oom_kill ") && (Int(line.split(separator: " ").last ?? "") ?? 0) > 0
        }
    }

    /// Kills whatever is still inside (`cgroup.kill`, Linux 5.14) and removes the cgroup, then
    /// calls `removed`. rmdir succeeds once the last process has gone, and killed processes take
    /// a moment: it is tried again every 10 ms for half a second, on a timer, holding no thread.
    func remove(then removed: @escaping @Sendable () -> Void = {}) {
        _ = SandboxCgroups.write("1", to: path + "/cgroup.kill")
        removeFolder(attempts: 50, then: removed)
    }

    private func removeFolder(attempts: Int, then removed: @escaping @Sendable () -> Void) {
        guard rmdir(path) != 0, errno == EBUSY, attempts > 1 else { return removed() }
        timers.after(0.01) { removeFolder(attempts: attempts - 1, then: removed) }
    }
}
