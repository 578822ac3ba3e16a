import Foundation
import ReplayCaptureModel
@testable import ReplayDaemon
import ReplaySystem
import Testing

/// The cgroup v2 set-up, on a folder laid out as /proc and /sys would be: this machine's kernel
/// keeps memory on cgroup v1, so the real hierarchy cannot be used here.
@Suite struct SandboxCgroupsTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("cgroups-\(UUID().uuidString.prefix(8))").path
    let service = "/user.slice/user-1000.slice/user@1000.service/app.slice/replayd.service"

    func lay(controllers: String, cgroupLine: String? = nil, mounted: Bool = true) throws -> String {
        let own = root + "/sys/fs/cgroup" + service
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/proc/self", withIntermediateDirectories: true)
        try "12:memory:/\n\(cgroupLine ?? "0::" + service)\n".write(toFile: root + "/proc/self/cgroup", atomically: true, encoding: .utf8)
        let mountinfo = "22 1 0:20 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
            + (mounted ? "35 24 0:30 / /sys/fs/cgroup rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n" : "")
        try mountinfo.write(toFile: root + "/proc/self/mountinfo", atomically: true, encoding: .utf8)
        try controllers.write(toFile: own + "/cgroup.controllers", atomically: true, encoding: .utf8)
        try "".write(toFile: own + "/cgroup.subtree_control", atomically: true, encoding: .utf8)
        return own
    }

    @Test func aDelegatedCgroupWithMemoryAndPidsIsSetUpAndEachSandboxGetsItsLimits() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let own = try lay(controllers: "cpu io memory pids\n")
        guard case .offered(let cgroups) = SandboxCgroups.detect(root: root, pid: 4242) else {
            Issue.record("not offered")
            return
        }
        #expect(cgroups.base == own)
        // replayd moved itself into a leaf, and handed memory and pids to its children.
        #expect(try String(contentsOfFile: own + "/replayd/cgroup.procs", encoding: .utf8) == "4242")
        #expect(try String(contentsOfFile: own + "/cgroup.subtree_control", encoding: .utf8) == "+memory +pids")

        let group = try #require(cgroups.confine([100, 101], name: "bc-1", memoryLimit: 50 << 20, processLimit: 64, timers: DispatchTimers()))
        #expect(try String(contentsOfFile: group.path + "/memory.max", encoding: .utf8) == "\(50 << 20)")
        #expect(try String(contentsOfFile: group.path + "/memory.swap.max", encoding: .utf8) == "0")
        #expect(try String(contentsOfFile: group.path + "/pids.max", encoding: .utf8) == "64")
        #expect(!group.killedAtMemoryLimit)
        try "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n".write(toFile: group.path + "/memory.events", atomically: true, encoding: .utf8)
        #expect(group.killedAtMemoryLimit)
    }

    @Test func withoutTheControllersOrTheHierarchyTheWalkStaysAndSaysWhy() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        _ = try lay(controllers: "hugetlb\n")
        guard case .notOffered(let why) = SandboxCgroups.detect(root: root) else {
            Issue.record("offered without a memory controller")
            return
        }
        #expect(why.contains("offers no memory and pids controllers (offered: hugetlb)"), "\(why)")
        try FileManager.default.removeItem(atPath: root)

        _ = try lay(controllers: "memory pids", mounted: false)
        guard case .notOffered(let unmounted) = SandboxCgroups.detect(root: root) else { Issue.record("offered unmounted"); return }
        #expect(unmounted == "cgroup v2 is not mounted")
        try FileManager.default.removeItem(atPath: root)

        _ = try lay(controllers: "memory pids", cgroupLine: "")
        guard case .notOffered(let none) = SandboxCgroups.detect(root: root) else { Issue.record("offered without v2"); return }
        #expect(none == "this kernel offers no cgroup v2 hierarchy")
    }
}
