import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The processes now running `executable` (by /proc/PID/exe), in every pid namespace this
/// one can see: a sandboxed extension counts wherever it runs.
public func processes(running executable: String) -> [Int32] {
    let target = URL(fileURLWithPath: executable).resolvingSymlinksInPath().path
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap(Int32.init).filter { pid in
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) == target
    }
}

/// The processes of a sandbox that runs `executable`: the extension and whatever it forked
/// (by /proc/PID/exe), and the bwrap processes that started it (by their command line).
public func sandboxProcesses(running executable: String) -> [Int32] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    let launchers = entries.compactMap(Int32.init).filter { pid in
        let arguments = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
        return arguments.split(separator: 0).contains { String(decoding: $0, as: UTF8.self) == executable }
    }
    return Array(Set(processes(running: executable) + launchers)).sorted()
}

/// Waits up to `timeout` seconds for every process of the sandbox running `executable` to
/// be gone; returns those still there, after SIGKILLing them so one test's leftovers never
/// reach the next.
public func sandboxLeftovers(running executable: String, timeout: Double = 5) -> [Int32] {
    let deadline = Date().addingTimeInterval(timeout)
    var left = sandboxProcesses(running: executable)
    while !left.isEmpty && Date() < deadline {
        Thread.sleep(forTimeInterval: 0.1)
        left = sandboxProcesses(running: executable)
    }
    for pid in left { kill(pid, SIGKILL) }
    return left
}
