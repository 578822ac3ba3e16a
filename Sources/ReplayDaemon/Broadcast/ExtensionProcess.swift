import Dispatch
import Foundation
import Logging
import ReplayIPC
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One upload extension, running in a bubblewrap sandbox: the whole system read-only, no
/// home directories, no store, no daemon sockets, a private /tmp, its own process and IPC
/// namespaces, no capabilities; the network stays (it uploads). Its memory is watched:
/// `residentBytes` is what the limit is checked against.
final class ExtensionProcess: ExtensionLink {
    /// ReplayKit's limit for broadcast upload extensions.
    static let memoryLimit = 50 * 1024 * 1024

    let process: ChildProcess
    /// The sandbox's pid 1, as our pid namespace numbers it.
    private let sandboxInit: Int32?
    private let statusPipe: Int32
    /// Its standard error, relayed into the daemon's log.
    private let output: ExtensionOutput
    /// Our end of the SOCK_SEQPACKET connection; the extension has the other as descriptor 3.
    let socket: Int32
    /// Reads the socket when it is readable; its cancel handler closes the socket.
    private let listener = Mutex<ReadableWatch?>(nil)
    private let closed = Mutex(false)

    /// - Parameters:
    ///   - hidden: directories the extension must not see (the store, the daemon's sockets).
    ///   - writable: directories the person chose for it (setup fields of kind `directory`).
    init(manifest: ExtensionManifest, hidden: [String], writable: [String], logger: Logger) throws(DaemonError) {
        guard FileManager.default.isExecutableFile(atPath: Self.bubblewrap) else {
            throw DaemonError(code: .captureFailed, message: "bubblewrap (\(Self.bubblewrap)) is not installed; extensions only run sandboxed")
        }
        var fds: [Int32] = [0, 0]
        do {
            try syscall("socketpair") { socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) }
        } catch {
            throw DaemonError(code: .captureFailed, message: "cannot connect to extension '\(manifest.id)': \(error)")
        }
        // A send that cannot go out within this time is a dropped sample, never a stalled capture.
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fds[0], SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        defer { Glibc.close(fds[1]) }
        // bwrap says on this pipe which pid the sandbox's init got in our namespace.
        let status: (read: Int32, write: Int32), errors: (read: Int32, write: Int32)
        do {
            status = try Pipe.make()
            errors = try Pipe.make()
        } catch {
            Glibc.close(fds[0])
            throw DaemonError(code: .captureFailed, message: "cannot start extension '\(manifest.id)': \(error)")
        }
        defer { Glibc.close(errors.write) }
        let arguments = Self.sandboxArguments(executable: manifest.executable, hidden: hidden, writable: writable)
        do {
            process = try ChildProcess(
                path: Self.bubblewrap, arguments: ["--json-status-fd", "4"] + arguments + ["--", manifest.executable],
                environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "OPENREPLAYKIT_BROADCAST_FD": "3"],
                stderr: .descriptor(errors.write), inheriting: [(fds[1], 3), (status.write, 4)])
        } catch {
            Glibc.close(fds[0])
            Glibc.close(status.write)
            Glibc.close(status.read)
            Glibc.close(errors.read)
            throw DaemonError(code: .captureFailed, message: "cannot start extension '\(manifest.id)': \(error)")
        }
        Glibc.close(status.write)
        sandboxInit = Self.readChildPID(status.read)
        // Kept open while bwrap runs: it writes its exit status there last, and a closed pipe
        // would end it with SIGPIPE instead of the extension's own status.
        statusPipe = status.read
        output = ExtensionOutput(fd: errors.read, extensionID: manifest.id, logger: logger)
        socket = fds[0]
    }

    /// The first line bwrap writes on its status descriptor: `{ "child-pid": N }`. nil if it
    /// failed before (the pipe then closes) or said nothing within 10 s.
    private static func readChildPID(_ fd: Int32) -> Int32? {
        var line: [UInt8] = []
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = MonotonicClock.nanoseconds() + 10_000_000_000
        while !line.contains(UInt8(ascii: "\n")) {
            let left = (deadline - MonotonicClock.nanoseconds()) / 1_000_000
            guard left > 0, poll(&entry, 1, Int32(left)) > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 256)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return nil }
            line += chunk[..<count]
        }
        let text = String(decoding: line.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return nil }
        return (object["child-pid"] as? NSNumber).map { Int32(truncating: $0) }
    }

    deinit {
        if !closed.withLock({ $0 }) { Glibc.close(socket) }
        Glibc.close(statusPipe)
        output.close()
    }

    func send(_ bytes: [UInt8], descriptors: [Int32]) -> Bool {
        // Under the lock: a closed socket's number may already name another descriptor.
        closed.withLock { closed in
            !closed && (try? DescriptorPassing.send(socket: socket, bytes: bytes, descriptors: descriptors)) != nil
        }
    }

    func listen(_ handler: @escaping @Sendable (ExtensionUtterance) -> Void) {
        let socket = self.socket
        let watch = ReadableWatch(descriptor: socket, label: "extension", whenCancelled: { [self] in closeSocket() }) { watch in
            let utterance: ExtensionUtterance
            do throws(SystemError) {
                let received = try DescriptorPassing.receive(socket: socket, maxBytes: BroadcastCodec.maxFramedMessage, maxDescriptors: 0)
                utterance = received.bytes.isEmpty ? .closed : .message(received.bytes)
            } catch {
                utterance = error.errno == ECONNRESET ? .closed : .unreadable("\(error)")
            }
            if case .message = utterance {} else { watch.cancel() }
            handler(utterance)
        }
        listener.withLock { $0 = watch }
    }

    func footprint() -> Int { residentBytes() }

    func onExit(_ handler: @escaping @Sendable (String) -> Void) {
        process.onExit { [self] _ in handler(exitDescription ?? "exited") }
    }

    func close() {
        if let listener = listener.withLock({ $0 }) { listener.cancel() } else { closeSocket() }
    }

    private func closeSocket() {
        if !closed.withLock({ state in defer { state = true }; return state }) { Glibc.close(socket) }
    }

    static let bubblewrap = "/usr/bin/bwrap"

    static func sandboxArguments(executable: String, hidden: [String], writable: [String]) -> [String] {
        var arguments = [
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--tmpfs", "/home", "--tmpfs", "/root", "--tmpfs", "/run",
            // No --die-with-parent: it fires when the spawning *thread* ends. The extension ends
            // instead when its socket closes, which the daemon's death also does.
            "--unshare-all", "--share-net", "--new-session", "--cap-drop", "ALL",
        ]
        for path in hidden where FileManager.default.fileExists(atPath: path) { arguments += ["--tmpfs", path] }
        // Its own executable stays visible even when it lives under a hidden directory.
        let folder = URL(fileURLWithPath: executable).deletingLastPathComponent().path
        arguments += ["--ro-bind", folder, folder]
        for path in writable { arguments += ["--bind", path, path] }
        return arguments
    }

    /// The extension's memory footprint, summed over the sandbox's processes: what it cannot
    /// give back, its anonymous memory resident or swapped (RssAnon + VmSwap). That is what
    /// iOS's 50 MB limit counts (phys_footprint) and what a cgroup limit cannot reclaim.
    /// Clean file-backed pages (library code, shared with every process that maps the same
    /// file and dropped by the kernel whenever it likes) do not count, nor do the shared
    /// surfaces it maps (RssShmem), which are the daemon's memory.
    func residentBytes() -> Int {
        var total = 0
        var pending = [process.pid]
        var seen = Set<Int32>()
        while let pid = pending.popLast(), seen.insert(pid).inserted {
            if pid != process.pid { total += Self.footprint(pid) }
            pending += Self.children(of: pid)
        }
        return total
    }

    /// Ends the whole sandbox: SIGKILL to its init (pid 1 of its pid namespace) takes every
    /// process inside with it, whatever the extension forked; then bwrap itself. The init's pid
    /// is used only while bwrap, its parent, still runs: bwrap exits as soon as its init does,
    /// so the pid is not one reused by another process by then.
    func kill() {
        if let sandboxInit, process.isRunning { Glibc.kill(sandboxInit, SIGKILL) }
        process.signal(SIGKILL)
    }

    /// Why it ended, in words a person can act on; nil while it runs.
    var exitDescription: String? {
        guard let status = process.terminationStatus else { return nil }
        if status > 128 {
            let signal = status - 128
            let name = [Int32(SIGSEGV): "SIGSEGV", SIGBUS: "SIGBUS", SIGABRT: "SIGABRT", SIGKILL: "SIGKILL", SIGILL: "SIGILL",
                        SIGTRAP: "SIGTRAP"][signal] ?? "signal \(signal)"
            return "crashed (\(name))"
        }
        return status == 0 ? "exited" : "exited with status \(status)"
    }

    private static func children(of pid: Int32) -> [Int32] {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8) else { return [] }
        return text.split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    private static func footprint(_ pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        var kilobytes = 0
        for line in status.split(separator: "\n") where line.hasPrefix("RssAnon:") || line.hasPrefix("VmSwap:") {
            kilobytes += Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0
        }
        return kilobytes * 1024
    }
}
