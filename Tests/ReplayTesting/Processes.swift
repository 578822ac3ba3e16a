import Foundation

/// The processes now running `executable` (by /proc/PID/exe), in every pid namespace this
/// one can see: a sandboxed extension counts wherever it runs.
public func processes(running executable: String) -> [Int32] {
    let target = URL(fileURLWithPath: executable).resolvingSymlinksInPath().path
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap(Int32.init).filter { pid in
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) == target
    }
}
