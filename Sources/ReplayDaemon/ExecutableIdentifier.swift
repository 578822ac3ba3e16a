import Foundation
import ReplayIPC
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Tells which executable a client process runs (`/proc/PID/exe`), the basis of every
/// consent and permission decision.
///
/// Once a system daemon has dropped to its own user, the kernel no longer lets it read
/// that link for other users' processes. So, before dropping root, it starts a tiny helper
/// (`replayd --identify-executables`) that keeps root and does nothing but answer "which
/// executable is pid N?" over a socket pair: privilege separation, as OpenSSH does it.
public final class ExecutableIdentifier: Sendable {
    private let helper: Mutex<(process: ChildProcess, fd: Int32)?>

    /// Reads `/proc/PID/exe` in this process.
    public init() {
        helper = Mutex(nil)
    }

    /// Starts the helper from `executable` (this replayd) while still root.
    public init(helperExecutable executable: String) throws {
        var fds: [Int32] = [0, 0]
        try syscall("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) }
        defer { close(fds[1]) }
        let process = try ChildProcess(path: executable, arguments: ["--identify-executables"], environment: [:],
                                       stdin: .descriptor(fds[1]), stdout: .descriptor(fds[1]), stderr: .descriptor(2))
        helper = Mutex((process, fds[0]))
    }

    public func executable(of pid: Int32) -> String? {
        if let path = PeerIdentity.executable(of: pid) { return path }
        return helper.withLock { helper -> String? in
            guard let helper else { return nil }
            var request = pid
            guard Glibc.send(helper.fd, &request, 4, Int32(MSG_NOSIGNAL)) == 4 else { return nil }
            var length: UInt16 = 0
            guard Self.readFully(helper.fd, &length, 2), length > 0 else { return nil }
            var bytes = [UInt8](repeating: 0, count: Int(length))
            guard bytes.withUnsafeMutableBytes({ raw in raw.baseAddress.map { Self.readFully(helper.fd, $0, raw.count) } ?? false })
            else { return nil }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// The helper's side: answers on standard input/output until the daemon goes away.
    public static func serveRequests() {
        var pid: Int32 = 0
        while readFully(0, &pid, 4) {
            let path = Array((PeerIdentity.executable(of: pid) ?? "").utf8.prefix(Int(UInt16.max)))
            var length = UInt16(path.count)
            guard write(1, &length, 2) == 2, path.isEmpty || write(1, path, path.count) == path.count else { return }
        }
    }

    private static func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Bool {
        var filled = 0
        while filled < count {
            let n = read(fd, buffer + filled, count - filled)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            filled += n
        }
        return true
    }
}
