import FoundationEssentials
import ReplayCaptureModel
import ReplayIPC
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Tells what a client process is (`ProcessFacts`: its executable, namespaces, loader
/// variables), the basis of every consent and permission decision.
///
/// Once a system daemon has dropped to its own user, the kernel no longer lets it read
/// `/proc/PID` for other users' processes. So, before dropping root, it starts a tiny helper
/// (`replayd --inspect-processes`) that keeps root and does nothing but answer "what is pid
/// N?" over a socket pair: privilege separation, as OpenSSH does it.
public final class ProcessInspector: Sendable {
    private let helper: Mutex<(process: ChildProcess, fd: Int32)?>

    /// The helper's flag on replayd's command line.
    public static let helperFlag = "--inspect-processes"

    /// Reads `/proc/PID` in this process.
    public init() {
        helper = Mutex(nil)
    }

    /// Starts the helper from `executable` (this replayd) while still root.
    public init(helperExecutable executable: String) throws {
        var fds: [Int32] = [0, 0]
        try syscall("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) }
        defer { close(fds[1]) }
        let process = try ChildProcess(path: executable, arguments: [Self.helperFlag], environment: [:],
                                       stdin: .descriptor(fds[1]), stdout: .descriptor(fds[1]), stderr: .descriptor(2))
        helper = Mutex((process, fds[0]))
    }

    /// The executable `pid` runs, when it can be read.
    public func executable(of pid: Int32) -> String? { facts(of: pid)?.executable }

    func facts(of pid: Int32) -> ProcessFacts? {
        if let facts = ProcessFacts.read(pid: pid) { return facts }
        return helper.withLock { helper -> ProcessFacts? in
            guard let helper else { return nil }
            var request = pid
            guard Glibc.send(helper.fd, &request, 4, Int32(MSG_NOSIGNAL)) == 4 else { return nil }
            var length: UInt32 = 0
            guard Self.readFully(helper.fd, &length, 4), length > 0, length <= Self.maxAnswer else { return nil }
            var bytes = [UInt8](repeating: 0, count: Int(length))
            guard bytes.withUnsafeMutableBytes({ raw in raw.baseAddress.map { Self.readFully(helper.fd, $0, raw.count) } ?? false })
            else { return nil }
            return try? JSONDecoder().decode(ProcessFacts.self, from: Data(bytes))
        }
    }

    /// A path is at most PATH_MAX; the rest of the facts are a few dozen bytes.
    private static let maxAnswer: UInt32 = 16 * 1024

    /// The helper's side: answers on standard input/output until the daemon goes away. An
    /// empty answer means the process could not be read.
    public static func serveRequests() {
        var pid: Int32 = 0
        while readFully(0, &pid, 4) {
            let answer = ProcessFacts.read(pid: pid).flatMap { try? JSONEncoder().encode($0) }.map(Array.init) ?? []
            var length = UInt32(answer.count)
            guard write(1, &length, 4) == 4, answer.isEmpty || write(1, answer, answer.count) == answer.count else { return }
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
