#if canImport(Glibc)
import Glibc
#endif
import CShims
import Dispatch
import Synchronization

/// A child process started with posix_spawn and reaped with waitpid. Children start in a
/// session of their own, so Ctrl-C in the caller's terminal reaches only the caller, which
/// then stops them in the right order.
public final class ChildProcess: Sendable {
    public let pid: Int32
    /// glibc's POSIX_SPAWN_SETSID, hidden from Swift behind _GNU_SOURCE.
    private static let spawnSetSID: Int32 = 0x80
    public let path: String
    private let exitStatus = Mutex<Int32?>(nil)

    /// Where a child's standard streams go: the null device, or a descriptor of ours.
    public enum Stream: Sendable {
        case null
        case descriptor(Int32)
    }

    /// - Parameter inheriting: descriptors of ours to hand over, as (ours, number in the child).
    public init(path: String, arguments: [String], environment: [String: String],
                stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null,
                inheriting: [(Int32, Int32)] = []) throws(SystemError) {
        self.path = path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, stream) in [(Int32(0), stdin), (Int32(1), stdout), (Int32(2), stderr)] {
            switch stream {
            case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, target)
            }
        }
        // dup2 clears close-on-exec on the copy, so exactly these reach the child; anything
        // above them that is not close-on-exec (a library's descriptor) is closed all the same.
        for (source, target) in inheriting { posix_spawn_file_actions_adddup2(&actions, source, target) }
        _ = CShims_spawn_closefrom(&actions, (inheriting.map(\.1).max() ?? 2) + 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A fresh session, and default signal handling whatever the parent ignores.
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(Self.spawnSetSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard status == 0 else { throw SystemError(call: "posix_spawn(\(path))", errno: status) }
        self.pid = pid
    }

    /// The Landlock ABI this kernel offers, 0 for none; `tcpConnectPorts` needs 4,
    /// `landlockScopes` 6.
    public static let landlockABI = Int(CShims_landlock_abi())

    /// Starts `path` confined (`CShims_spawn_confined`): no new privileges, a seccomp filter
    /// against ptrace and reading other processes' memory, with `landlockScopes` no abstract
    /// unix socket or signal beyond its own Landlock domain, and with `tcpConnectPorts` TCP
    /// connects to those ports only (on any address), with `files` only those files and
    /// folders (Landlock ABI 1; ignored without Landlock); everything it execs inherits these.
    /// It is started from `WatcherThread`, which lives as long as this process, so a
    /// parent-death signal it sets fires only when this process ends.
    public init(confinedPath path: String, arguments: [String], environment: [String: String], landlockScopes: Bool,
                tcpConnectPorts: [UInt16]? = nil, files: FileAccess? = nil, stderr: Stream = .null,
                inheriting: [(Int32, Int32)] = []) throws(SystemError) {
        self.path = path
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard null >= 0 else { throw SystemError(call: "open(/dev/null)", errno: errno) }
        defer { close(null) }
        let stderrSource: Int32 = if case .descriptor(let fd) = stderr { fd } else { null }
        let handed = [(null, Int32(0)), (null, 1), (stderrSource, 2)] + inheriting
        let files = Self.landlockABI >= 1 ? files : nil
        let result = WatcherThread.shared.run {
            let argv = ([path] + arguments).map { strdup($0) } + [nil]
            let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            let readable = (files?.readable ?? []).map { strdup($0) } + [nil]
            let writable = (files?.writable ?? []).map { strdup($0) } + [nil]
            defer {
                for strings in [argv, envp, readable, writable] { strings.forEach { free($0) } }
            }
            let sources = handed.map(\.0), targets = handed.map(\.1), ports = tcpConnectPorts ?? []
            return path.withCString { path in
                argv.withUnsafeBufferPointer { argv in
                    envp.withUnsafeBufferPointer { envp in
                        sources.withUnsafeBufferPointer { sources in
                            targets.withUnsafeBufferPointer { targets in
                                ports.withUnsafeBufferPointer { ports in
                                    readable.withUnsafeBufferPointer { readablePaths in
                                        writable.withUnsafeBufferPointer { writablePaths in
                                            var spawn = CShims_confined_spawn(
                                                path: path, argv: argv.baseAddress, envp: envp.baseAddress, sources: sources.baseAddress,
                                                targets: targets.baseAddress, count: Int32(handed.count), scope: landlockScopes ? 1 : 0,
                                                limit_connect: tcpConnectPorts == nil ? 0 : 1, connect_ports: ports.baseAddress,
                                                connect_port_count: Int32(ports.count), limit_files: files == nil ? 0 : 1,
                                                readable: readablePaths.baseAddress, readable_count: Int32(readable.count - 1),
                                                writable: writablePaths.baseAddress, writable_count: Int32(writable.count - 1))
                                            return CShims_spawn_confined(&spawn)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        guard result > 0 else { throw SystemError(call: "confined spawn(\(path))", errno: -result) }
        pid = result
    }

    /// This process's environment with `changes` applied.
    public static func environment(adding changes: [String: String]) -> [String: String] {
        var environment: [String: String] = [:]
        var entry = Glibc.environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                environment[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        for (key, value) in changes { environment[key] = value }
        return environment
    }

    /// True until the child has exited (and been reaped).
    public var isRunning: Bool { poll() == nil }

    /// The exit status once the child has exited: its code, or 128 + the signal that ended it.
    public var terminationStatus: Int32? { poll() }

    /// The signal a `terminationStatus` says ended the child ("SIGSEGV", or "signal 42" for
    /// one without a name here); nil for a child that exited by itself.
    public static func signalName(ofStatus status: Int32) -> String? {
        guard status > 128 else { return nil }
        let number = status - 128
        return signalNames[number] ?? "signal \(number)"
    }

    private static let signalNames: [Int32: String] = [
        SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGABRT: "SIGABRT", SIGKILL: "SIGKILL", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
        SIGFPE: "SIGFPE", SIGTERM: "SIGTERM",
    ]

    /// Blocks until the child exits; returns its status as `terminationStatus` does.
    @discardableResult
    public func wait() -> Int32 {
        while true {
            if let status = poll() { return status }
            // Waits for the exit without reaping it (WNOWAIT): `poll` reaps, under its lock.
            var info = siginfo_t()
            let result = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT)
            if result == -1 && errno != EINTR { return poll() ?? -1 }  // reaped by another (its status is kept), or not ours
        }
    }

    /// Waits up to `timeout` seconds for the child's pidfd to say it exited; returns the
    /// status, or nil if it is still running.
    public func wait(timeout: Double) -> Int32? {
        if let status = poll() { return status }
        let pidfd = CShims_pidfd_open(pid)
        guard pidfd >= 0 else { return poll() }
        defer { close(pidfd) }
        let deadline = MonotonicClock.nanoseconds() + Int64(timeout * 1e9)
        var entry = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        while true {
            let left = deadline - MonotonicClock.nanoseconds()
            if left <= 0 { return poll() }
            let ready = Glibc.poll(&entry, 1, Int32(min(left / 1_000_000 + 1, Int64(Int32.max))))
            if ready > 0 { return wait() }
            if ready < 0 && errno != EINTR { return poll() }
        }
    }

    /// Calls `handler` with the status once the child has exited and been reaped. Waits on a
    /// pidfd (`ReadableWatch`): no thread is held while the child runs.
    public func onExit(_ handler: @escaping @Sendable (Int32) -> Void) {
        let pidfd = CShims_pidfd_open(pid)
        guard pidfd >= 0 else {
            // Already reaped (or a kernel without pidfds): reap on a thread of its own.
            DispatchQueue(label: "child-exit").async { handler(self.wait()) }
            return
        }
        // The watch keeps itself alive while its source runs, and cancels itself on the exit.
        _ = ReadableWatch(descriptor: pidfd, label: "child-exit", whenCancelled: { close(pidfd) }) { [self] watch in
            let status = wait()
            watch.cancel()
            handler(status)
        }
    }

    public func signal(_ number: Int32) {
        if isRunning { kill(pid, number) }
    }

    /// SIGTERM, then SIGKILL if it has not exited after `grace` seconds.
    public func terminate(grace: Double = 3) {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        if wait(timeout: grace) == nil {
            kill(pid, SIGKILL)
            wait()
        }
    }

    /// Reaps the child if it has exited. The reaping and the recording of its status happen
    /// under one lock: a second reaper (a `signal` while `onExit`'s waits) finds the status
    /// recorded, never a child already gone and no status (it reported -1 so under load).
    private func poll() -> Int32? {
        exitStatus.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
            // WIFEXITED / WEXITSTATUS / WTERMSIG are macros; decode the status word by hand.
            let signalled = raw & 0x7f
            status = signalled == 0 ? (raw >> 8) & 0xff : 128 + signalled
            return status
        }
    }
}
