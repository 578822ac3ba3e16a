import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// The folder of the Swift runtime replayd loaded as shared libraries, if it did: an installed
/// tree (the Debian package, scripts/install) ships one runtime folder for all its executables
/// (lib/openreplaykit/swift), which its extensions load too. The sandbox shows that folder even
/// where it hides what is around it (an install under a home directory).
enum SwiftRuntimeFolder {
    /// nil when the runtime is linked into the executable (a static build).
    static let loaded: String? = ProcFS.text("/proc/self/maps").flatMap(folder(inMaps:))

    /// The real folder of the libswiftCore.so that a /proc/PID/maps text names, if any.
    static func folder(inMaps maps: String) -> String? {
        // "start-end perms offset dev inode   /path/to/libswiftCore.so"
        guard let line = maps.split(separator: "\n").first(where: { $0.hasSuffix("/libswiftCore.so") }),
              let slash = line.firstIndex(of: "/"), let real = realpath(String(line[slash...]), nil) else { return nil }
        defer { free(real) }
        let resolved = String(cString: real)
        return String(resolved[..<(resolved.lastIndex(of: "/") ?? resolved.endIndex)])
    }
}
