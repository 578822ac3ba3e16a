import FoundationEssentials
import ReplayCaptureModel
import ReplayIPC
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// What the kernel says about a client process, read from `/proc/PID` by whoever may read it
/// (the daemon itself, or the system daemon's root helper): enough to tell the person's own,
/// unmodified `replay` from a program that only looks like it.
struct ProcessFacts: Codable, Equatable, Sendable {
    /// `/proc/PID/exe`, as a path in the process's own mount namespace.
    var executable: String?
    /// The executable file itself (`stat` through `/proc/PID/exe`).
    var executableFile: FileIdentity?
    /// Whether it lives in the inspector's own user and mount namespaces. A process in
    /// others (`unshare -Urm`, a bubblewrap or Flatpak sandbox) can bind any program or
    /// folder over any path, so no path it shows can be trusted.
    var sharesNamespaces: Bool
    /// Dynamic-loader variables set in the environment it started with (LD_PRELOAD, …):
    /// each loads code of somebody's choosing into the program before its `main`.
    var loaderVariables: [String]
    /// Whether a debugger is attached (`TracerPid`), which can make it do anything.
    var isTraced: Bool

    /// Variables with which glibc's loader runs other code inside a program.
    static let loaderVariableNames = ["LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH"]

    /// Reads the facts of `pid`; nil when the process is gone or hidden from this process.
    static func read(pid: Int32) -> ProcessFacts? {
        guard pid > 0 else { return nil }
        let directory = "/proc/\(pid)"
        guard let environment = ProcFS.bytes("\(directory)/environ"), let status = ProcFS.text("\(directory)/status") else {
            return nil
        }
        let variables = environment.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        let loaderVariables = loaderVariableNames.filter { name in
            variables.contains { $0.hasPrefix("\(name)=") && $0.count > name.count + 1 }
        }
        let tracer = status.split(separator: "\n").first { $0.hasPrefix("TracerPid:") }
            .flatMap { Int32($0.dropFirst("TracerPid:".count).trimmingSpaces()) }
        return ProcessFacts(
            executable: PeerIdentity.executable(of: pid),
            executableFile: FileIdentity(path: "\(directory)/exe"),
            sharesNamespaces: ["user", "mnt"].allSatisfy { namespace in
                guard let theirs = FileIdentity(path: "\(directory)/ns/\(namespace)"),
                      let ours = FileIdentity(path: "/proc/self/ns/\(namespace)") else { return false }
                return theirs == ours
            },
            loaderVariables: loaderVariables,
            isTraced: tracer.map { $0 != 0 } ?? true)
    }
}
