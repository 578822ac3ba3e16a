#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
public import ReplaySystem

/// Who is on the other end of a Unix socket, as the kernel tells it (SO_PEERCRED), not as
/// the client claims: the basis for per-process consent and for the daemon's logs.
public struct PeerIdentity: Sendable, Equatable, CustomStringConvertible {
    public let pid: Int32
    public let uid: UInt32
    public let gid: UInt32
    /// The client's executable (`/proc/PID/exe`), when it can still be read.
    public let executable: String?
    /// When the process started (clock ticks since boot): with the pid, names one process
    /// even after its pid is reused.
    public let startTime: UInt64?

    /// Asks the kernel about the peer of a connected socket; `executableOf` reads
    /// `/proc/PID/exe` (a daemon that dropped root asks a helper that kept the right to).
    public init(socket fd: Int32, executableOf: (Int32) -> String? = PeerIdentity.executable(of:)) throws(SystemError) {
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        try syscall("getsockopt(SO_PEERCRED)") { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) }
        pid = credentials.pid
        uid = credentials.uid
        gid = credentials.gid
        executable = executableOf(credentials.pid)
        startTime = Self.startTime(of: credentials.pid)
    }

    /// Field 22 of `/proc/PID/stat`; the command name before it may hold spaces and parentheses.
    public static func startTime(of pid: Int32) -> UInt64? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        // fields[0] is field 3 (state), so field 22 is fields[19].
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }

    /// True when both name the very same process: the pid, and its start time (a pid can be reused).
    public func isSameProcess(as other: PeerIdentity) -> Bool {
        pid == other.pid && startTime != nil && startTime == other.startTime
    }

    /// True while the process this identity names is still running.
    public var isAlive: Bool { startTime != nil && Self.startTime(of: pid) == startTime }

    public static func executable(of pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { "pid \(pid) uid \(uid) (\(executable ?? "unknown executable"))" }
}

/// Linux's `struct ucred`, which Glibc hides behind _GNU_SOURCE: pid_t, uid_t, gid_t.
private struct PeerCredentials {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}
