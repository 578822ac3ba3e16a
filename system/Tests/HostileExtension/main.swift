import Foundation
import ReplayExtensionKit
import ReplayMedia
#if canImport(Glibc)
import Glibc
#endif

/// The descriptors this process had before it opened any of its own: what it inherited.
let inheritedDescriptors: [String] = {
    let listing = "/proc/self/fd"
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: listing)) ?? []
    return entries.compactMap { entry -> String? in
        // The listing's own descriptor names its directory; it is ours, not inherited.
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(listing)/\(entry)") else { return nil }
        return target.hasPrefix("/proc/") ? nil : "\(entry)=\(target)"
    }.sorted { Int($0.prefix { $0 != "=" }) ?? 0 < Int($1.prefix { $0 != "=" }) ?? 0 }
}()

/// libc calls Swift cannot make directly (variadic, or declared only under _GNU_SOURCE),
/// looked up as an attacker would.
enum Libc {
    static func symbol<T>(_ name: String, as type: T.Type) -> T { unsafeBitCast(dlsym(dlopen(nil, RTLD_NOW), name), to: type) }
    static let ptrace = symbol("ptrace", as: (@convention(c) (Int32, Int32, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Int).self)
    static let syscall = symbol("syscall", as: (@convention(c) (Int, Int, Int, Int) -> Int).self)
    static let fork = symbol("fork", as: (@convention(c) () -> Int32).self)
    static let processVMReadv = symbol("process_vm_readv", as: VMCopy.self)
    static let processVMWritev = symbol("process_vm_writev", as: VMCopy.self)
    typealias VMCopy = @convention(c) (Int32, UnsafePointer<iovec>, UInt, UnsafePointer<iovec>, UInt, UInt) -> Int
    static let memfdCreate = symbol("memfd_create", as: (@convention(c) (UnsafePointer<CChar>, UInt32) -> Int32).self)
}

/// "ok", or the error's name: what a call that returned `result` (-1 on failure) did.
func outcome(_ result: Int) -> String {
    guard result == -1 else { return "ok" }
    let names = [EPERM: "EPERM", EACCES: "EACCES", ECONNREFUSED: "ECONNREFUSED"]
    return names[errno] ?? "errno \(errno)"
}

/// A child that sleeps until it is killed, never touching the allocator (it was forked from
/// a threaded process); with `megabytes`, it first dirties that much anonymous memory.
func forkSleeper(megabytes: Int = 0) -> Int32 {
    let pid = Libc.fork()
    if pid == 0 {
        if megabytes > 0, let memory = mmap(nil, megabytes << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
           memory != MAP_FAILED {
            memset(memory, 1, megabytes << 20)
        }
        while true { pause() }
    }
    return pid
}

/// What the X server's abstract socket answers: connects to the first `@/tmp/.X11-unix/X<n>`
/// listed in /proc/net/unix (or, with none listed, as in a network namespace of its own, to
/// the first of X0…X99 that does not refuse) and asks for a session, as a screen grabber would
/// before GetImage.
func knockOnTheXServer() -> String {
    let table = (try? String(contentsOfFile: "/proc/net/unix", encoding: .utf8)) ?? ""
    guard let name = table.split(separator: "\n").compactMap({ $0.split(separator: " ").last })
        .first(where: { $0.hasPrefix("@/tmp/.X11-unix/X") }) else {
        let answers = (0..<100).lazy.map { knockOnTheXServer(named: "@/tmp/.X11-unix/X\($0)") }
        return answers.first { $0 != "connect: ECONNREFUSED" } ?? "connect: ECONNREFUSED"
    }
    return knockOnTheXServer(named: name)
}

func knockOnTheXServer<Name: StringProtocol>(named name: Name) -> String {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let path = Array(name.dropFirst().utf8)
    withUnsafeMutableBytes(of: &address.sun_path) { bytes in
        bytes[0] = 0
        for (index, byte) in path.enumerated() { bytes[index + 1] = byte }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + path.count)
    let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) } }
    guard connected == 0 else { return "connect: \(outcome(-1))" }
    // Connection setup: little-endian, protocol 11.0, no authorisation.
    var setup: [UInt8] = [UInt8(ascii: "l"), 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    _ = write(fd, &setup, setup.count)
    var reply = [UInt8](repeating: 0, count: 8)
    let count = read(fd, &reply, reply.count)
    return count > 0 && reply[0] == 1 ? "the X server accepted a session" : "connected, setup answered \(reply[0])"
}

/// Ways to open a TCP connection: connect(2), and two that Landlock's connect rules miss.
enum Knock: String, CaseIterable {
    case connect
    /// sendto(2) with MSG_FASTOPEN connects without connect(2).
    case fastopen
    /// A Multipath TCP socket reaches plain TCP servers too.
    case mptcp
}

/// What opening a TCP connection to 127.0.0.1:`port` does: "ok" or the error's name.
func knockOnLoopback(port: UInt16, _ knock: Knock) -> String {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), knock == .mptcp ? 262 /* IPPROTO_MPTCP */ : 0)
    guard fd >= 0 else { return "socket: \(outcome(-1))" }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
    let length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            knock == .fastopen ? sendto(fd, "x", 1, 0x2000_0000 /* MSG_FASTOPEN */, address, length) : Int(connect(fd, address, length))
        }
    }
    return outcome(result)
}

/// Sends `fd` over `socket` (SCM_RIGHTS) and closes it: then only the message in flight holds it.
func sendAway(_ fd: Int32, over socket: Int32) -> Bool {
    // cmsghdr (length, level, type) and one descriptor, padded to CMSG_SPACE(4).
    var control = [UInt8](repeating: 0, count: 24)
    control.withUnsafeMutableBytes { bytes in
        bytes.storeBytes(of: 20, toByteOffset: 0, as: Int.self)
        bytes.storeBytes(of: SOL_SOCKET, toByteOffset: 8, as: Int32.self)
        bytes.storeBytes(of: Int32(SCM_RIGHTS), toByteOffset: 12, as: Int32.self)
        bytes.storeBytes(of: fd, toByteOffset: 16, as: Int32.self)
    }
    var byte: UInt8 = 1
    let sent = withUnsafeMutablePointer(to: &byte) { byte in
        control.withUnsafeMutableBytes { control in
            var part = iovec(iov_base: byte, iov_len: 1)
            return withUnsafeMutablePointer(to: &part) { part in
                var message = msghdr(msg_name: nil, msg_namelen: 0, msg_iov: part, msg_iovlen: 1,
                                     msg_control: control.baseAddress, msg_controllen: control.count, msg_flags: 0)
                return sendmsg(socket, &message, 0)
            }
        }
    }
    close(fd)
    return sent == 1
}

/// Runs `command` with `sh -c` and returns the first line it prints (either stream), or "".
func firstLine(of command: String) -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    guard (try? process.run()) != nil else { return "could not run sh" }
    var line = Data()
    while !line.contains(UInt8(ascii: "\n")) {
        let chunk = output.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        line += chunk
    }
    return String(decoding: line.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
}

/// Dirties `bytes` at `memory`, 1 MB at a time, so that it is resident and the watchdog sees it grow.
func dirty(_ memory: UnsafeMutableRawPointer, _ bytes: Int) {
    for offset in stride(from: 0, to: bytes, by: 1 << 20) {
        memset(memory + offset, 1, min(1 << 20, bytes - offset))
        usleep(1_000)
    }
}

/// Maps `megabytes` of /dev/zero shared and dirties them: shared memory, not RssAnon.
func mapDevZero(megabytes: Int) -> String {
    let zero = open("/dev/zero", O_RDWR)
    defer { close(zero) }
    let memory = mmap(nil, megabytes << 20, PROT_READ | PROT_WRITE, MAP_SHARED, zero, 0)
    guard let memory, memory != MAP_FAILED else { return outcome(-1) }
    dirty(memory, megabytes << 20)
    return "held"
}

/// Queues `megabytes` on socket pairs it writes to and never reads, each with the largest send
/// buffer it may ask for: kernel memory no process shows. Returns the megabytes queued.
func queueOnSockets(megabytes: Int) -> Int {
    var queued = 0, pairs = 0
    let block = [UInt8](repeating: 1, count: 1 << 16)
    while queued < megabytes << 20, pairs < 400 {
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &pair) == 0 else { break }
        var size: Int32 = 1 << 30
        setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        while queued < megabytes << 20 {
            let sent = block.withUnsafeBytes { send(pair[0], $0.baseAddress, $0.count, 0) }
            if sent <= 0 { break }
            queued += sent
        }
        pairs += 1
        usleep(5_000)
    }
    return queued >> 20
}

/// Misbehaves on purpose, as `--setup behaviour=…` says, so the tests can check that the
/// host contains it: the broadcast ends with a clear error and everything else goes on.
final class HostileHandler: BroadcastSampleHandler {
    private var behaviour = ""
    private var hoard: [UnsafeMutableRawPointer] = []
    /// What "keep-all" keeps: every picture it was given, and so every picture surface.
    private var kept: [VideoSample] = []

    override func broadcastStarted(setupInfo: [String: String]) {
        behaviour = setupInfo["behaviour"] ?? ""
        if behaviour == "descriptors" {
            // What an attacker would look for first: anything of replayd's it could use.
            updateServiceInfo(["inherited": inheritedDescriptors.joined(separator: " ")])
        }
        if behaviour == "stderr-flood" {
            // Tries to rewrite the daemon's log from its start, then to fill the disk with it.
            _ = lseek(2, 0, SEEK_SET)
            _ = ftruncate(2, 0)
            let line = Array(repeating: UInt8(ascii: "x"), count: 199) + [UInt8(ascii: "\n")]
            for _ in 0..<100_000 { _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) } }
            updateServiceInfo(["flooded": "yes"])
        }
        if behaviour == "finish-error" {
            // Gives up at once, as an extension whose service refused it would.
            finishBroadcast(error: "the service refused the stream")
        }
        if behaviour == "read", let path = setupInfo["path"] {
            // Looks for the daemon's secrets where they are kept on disk.
            let fd = open(path, O_RDONLY)
            var answer = "no: \(String(cString: strerror(errno)))"
            if fd >= 0 {
                var buffer = [UInt8](repeating: 0, count: 4096)
                answer = "yes: \(read(fd, &buffer, buffer.count)) bytes"
                close(fd)
            }
            updateServiceInfo(["read": answer])
        }
        if behaviour == "snoop" {
            // What a root person's system keeps in /etc and /var, and what the sandbox shows of them.
            func tryRead(_ path: String) -> String {
                let fd = open(path, O_RDONLY)
                guard fd >= 0 else { return "no: \(String(cString: strerror(errno)))" }
                defer { close(fd) }
                var buffer = [UInt8](repeating: 0, count: 4096)
                return "yes: \(read(fd, &buffer, buffer.count)) bytes"
            }
            func list(_ path: String) -> String {
                (try? FileManager.default.contentsOfDirectory(atPath: path))?.sorted().joined(separator: ",") ?? "no"
            }
            updateServiceInfo([
                "shadow": tryRead("/etc/shadow"), "shadow-backup": tryRead("/var/backups/shadow.bak"),
                "ssl-private": list("/etc/ssl/private"), "etc": list("/etc"), "var": list("/var"),
                "certificates": String((try? FileManager.default.contentsOfDirectory(atPath: "/etc/ssl/certs"))?.count ?? 0),
                "resolver": tryRead("/etc/resolv.conf"), "hosts": tryRead("/etc/hosts"), "time-zone": tryRead("/etc/localtime"),
                "loader-cache": tryRead("/etc/ld.so.cache"),
            ])
        }
        if behaviour == "loopback" {
            // The host's sockets, then every loopback port it was told of: the one its setup's
            // URL names and others found listening (the pages, another user's service).
            let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)).map { "\($0.split(separator: "\n").count) lines" }
            // io_uring's operations pass no seccomp filter (without parameters it would be EFAULT).
            var info = ["proc-net-tcp": table ?? "no: \(String(cString: strerror(errno)))",
                        "io_uring": outcome(Libc.syscall(425 /* io_uring_setup */, 1, 0, 0))]
            let named = setupInfo["url"].flatMap { URLComponents(string: $0)?.port }.map { [String($0)] } ?? []
            // Which of those ports /proc/net/tcp and tcp6 list as someone's local port (":1F90 ").
            let tables = ["/proc/net/tcp", "/proc/net/tcp6"].compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }.joined()
            for port in named + (setupInfo["ports"] ?? "").split(separator: ",").map(String.init) {
                let hex = UInt16(port).map { ":" + String(format: "%04X", $0) + " " } ?? "?"
                info["listed-\(port)"] = tables.contains(hex) ? "yes" : "no"
                for knock in Knock.allCases {
                    info["\(knock.rawValue)-\(port)"] = UInt16(port).map { knockOnLoopback(port: $0, knock) } ?? "not a port"
                }
            }
            updateServiceInfo(info)
        }
        if behaviour == "x11" {
            updateServiceInfo(["x11": knockOnTheXServer()])
        }
        if behaviour == "ptrace" {
            // Its sandbox's init (its parent's side), a child of its own, and its own memory.
            let child = forkSleeper()
            let byte = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
            var local = iovec(iov_base: byte, iov_len: 1)
            let attachInit = outcome(Libc.ptrace(16 /* PTRACE_ATTACH */, 1, nil, nil))
            let attachChild = outcome(Libc.ptrace(16, child, nil, nil))
            let readInit = outcome(Libc.processVMReadv(1, &local, 1, &local, 1, 0))
            let readSelf = outcome(Libc.processVMReadv(getpid(), &local, 1, &local, 1, 0))
            let writeSelf = outcome(Libc.processVMWritev(getpid(), &local, 1, &local, 1, 0))
            // getpid through the x32 ABI's numbering.
            let x32 = outcome(Libc.syscall(0x4000_0000 | 39, 0, 0, 0))
            kill(child, SIGKILL)
            updateServiceInfo(["ptrace-init": attachInit, "ptrace-child": attachChild, "vm-read-init": readInit,
                               "vm-read-self": readSelf, "vm-write-self": writeSelf, "x32": x32])
        }
        if behaviour == "fill-tmp" {
            // How big its /tmp is, then 2,000 MB into it.
            var info = statvfs()
            statvfs("/tmp", &info)
            updateServiceInfo(["tmp-size-mb": "\((Int(info.f_blocks) * Int(info.f_frsize)) >> 20)"])
            let fd = open("/tmp/fill", O_WRONLY | O_CREAT, 0o600)
            let block = [UInt8](repeating: 1, count: 1 << 20)
            var written = 0
            while written < 2000, block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == block.count { written += 1 }
            updateServiceInfo(["tmp-size-mb": "\((Int(info.f_blocks) * Int(info.f_frsize)) >> 20)", "tmp-written-mb": "\(written)"])
        }
        if behaviour == "memfd" {
            // 500 MB in a memfd it never maps: no RssAnon, no RssShmem.
            let fd = Libc.memfdCreate("openreplaykit-broadcast-0", 0)
            guard fd >= 0 else { return updateServiceInfo(["memfd": outcome(-1)]) }
            let block = [UInt8](repeating: 1, count: 1 << 20)
            for _ in 0..<500 { _ = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
            updateServiceInfo(["memfd": "held"])
        }
        if behaviour == "memfd-mapped" {
            // 500 MB in a memfd it maps and then closes: only the mapping holds it (RssShmem).
            let fd = Libc.memfdCreate("openreplaykit-broadcast-1", 0)
            guard fd >= 0 else { return updateServiceInfo(["memfd": outcome(-1)]) }
            _ = ftruncate(fd, 500 << 20)
            let memory = mmap(nil, 500 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
            close(fd)
            if let memory, memory != MAP_FAILED {
                for offset in stride(from: 0, to: 500 << 20, by: 1 << 20) {
                    memset(memory + offset, 1, 1 << 20)
                    usleep(1_000)
                }
            }
            updateServiceInfo(["memfd": "mapped"])
        }
        if behaviour == "memfd-in-flight" {
            // 300 MB in ten memfds, each sent to itself and closed once filled: no process holds
            // them, the messages do, and it never holds more than 30 MB at a time.
            var pair: [Int32] = [0, 0]
            _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair)
            let block = [UInt8](repeating: 1, count: 1 << 20)
            var sent = 0
            for _ in 0..<10 {
                let fd = Libc.memfdCreate("hoard", 0)
                guard fd >= 0 else { return updateServiceInfo(["memfd-in-flight": outcome(-1)]) }
                for _ in 0..<30 { _ = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
                if sendAway(fd, over: pair[0]) { sent += 30 }
            }
            updateServiceInfo(["memfd-in-flight": "\(sent) MB in flight"])
        }
        if behaviour == "shared-anonymous" {
            // 300 MB shared and anonymous (RssShmem, not RssAnon), then all but its first page
            // unmapped: the pages stay in the object, and no process shows them.
            let size = 300 << 20
            let memory = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)
            guard let memory, memory != MAP_FAILED else { return updateServiceInfo(["shared-anonymous": outcome(-1)]) }
            dirty(memory, size)
            munmap(memory + 4096, size - 4096)
            updateServiceInfo(["shared-anonymous": "held"])
        }
        if behaviour == "dev-zero" {
            // The same through /dev/zero mapped shared, which a seccomp filter cannot tell from a file.
            updateServiceInfo(["dev-zero": mapDevZero(megabytes: 300)])
        }
        if behaviour == "nested-tmpfs" {
            // A user and mount namespace of its own, a tmpfs there, 300 MB in it: the sandbox's
            // /tmp shows nothing, and no process holds it in memory.
            let script = "mount -t tmpfs -o size=400m none /tmp && head -c 300M /dev/zero > /tmp/hoard && echo held"
                + " && exec sleep 1000 </dev/null >/dev/null 2>&1"
            let nested = firstLine(of: "exec unshare --map-root-user --mount sh -c '\(script)'")
            // The other ways around the walk, each with harmless arguments (x86_64's numbers):
            // only a filter answers EPERM to all of them.
            let calls = [("mount", 165), ("fsopen", 430), ("open_tree", 428), ("keyctl", 250), ("add_key", 248),
                         ("perf_event_open", 298), ("io_uring_setup", 425), ("userfaultfd", 323), ("setns", 308)]
                .map { "\($0.0)=\(outcome(Libc.syscall($0.1, 0, 0, 0)))" }
            updateServiceInfo(["nested-tmpfs": nested, "calls": calls.joined(separator: ", ")])
        }
        if behaviour == "socket-buffers" {
            updateServiceInfo(["socket-buffers-mb": "\(queueOnSockets(megabytes: 300))"])
        }
        if behaviour == "stacked" {
            // 20 MB in each of three places, none of them over the limit alone.
            let file = open("/tmp/stack", O_WRONLY | O_CREAT, 0o600)
            let block = [UInt8](repeating: 1, count: 1 << 20)
            for _ in 0..<20 { _ = block.withUnsafeBytes { write(file, $0.baseAddress, $0.count) } }
            updateServiceInfo(["stacked": "\(mapDevZero(megabytes: 20)), \(queueOnSockets(megabytes: 20)) MB queued"])
        }
        if behaviour == "sysv-shm" {
            // A System V segment, which outlives every mapping of it: refused outright.
            let id = shmget(IPC_PRIVATE, 100 << 20, IPC_CREAT | 0o600)
            updateServiceInfo(["shmget": id >= 0 ? "ok" : outcome(-1)])
        }
        if behaviour == "thread-child" {
            // 300 MB in a child whose parent is a thread other than the main one.
            // The thread stays: were it to end, the child would pass to another thread.
            let thread = Thread {
                _ = forkSleeper(megabytes: 300)
                while true { sleep(60) }
            }
            thread.start()
        }
        if behaviour == "fork-bomb" {
            // Small ones (sleep(1)), so it is their number that counts, not their memory.
            for _ in 0..<200 {
                if Libc.fork() == 0 {
                    execv("/bin/sleep", [strdup("sleep"), strdup("1000"), nil])
                    _exit(1)
                }
                usleep(2_000)
            }
            updateServiceInfo(["forked": "200"])
        }
        if behaviour == "linger" {
            // Will not go: SIGTERM ignored, a child in a session of its own, and exit() itself
            // blocked (the kit exits once replayd closes the connection).
            signal(SIGTERM, SIG_IGN)
            if Libc.fork() == 0 {
                setsid()
                while true { pause() }
            }
            atexit { while true { sleep(60) } }
            updateServiceInfo(["lingering": "yes"])
        }
        if behaviour == "garbage" {
            // Bytes that are no message at all, straight onto the daemon's socket.
            var junk: [UInt8] = [0xff, 0xff, 0xff, 0x7f, 0xde, 0xad, 0xbe, 0xef]
            _ = send(3, &junk, junk.count, Int32(MSG_NOSIGNAL))
        }
    }

    override func broadcastFinished() {
        if behaviour == "linger" { while true { sleep(60) } }
    }

    /// What replayd told it was dropped, for the slow extension's test to hold against the status.
    override func broadcastDroppedFrames(_ count: Int, total: Int) {
        // Only these say: service info is replaced whole, and an attack's findings must stay in
        // it when a loaded machine drops a picture meanwhile.
        guard behaviour == "slow" || behaviour == "keep-all" else { return }
        updateServiceInfo(["droppedTold": String(total)])
    }

    override func processSampleBuffer(_ sample: SampleBuffer) {
        guard case .video(let frame) = sample else { return }
        switch behaviour {
        case "write-surface":
            // The surface is mapped read-only, and `bytes` is immutable by type: casting that away faults.
            UnsafeMutableRawPointer(mutating: frame.pixels.baseAddress).storeBytes(of: 0xff, as: UInt8.self)
        case "allocate":
            // 200 MB, touched 10 MB at a time, so the memory really is resident.
            while hoard.count < 20 {
                let block = malloc(10 << 20)!
                memset(block, 1, 10 << 20)
                hoard.append(block)
                usleep(20_000)
            }
        case "hang":
            while true { sleep(60) }
        case "crash":
            abort()
        case "slow":
            // Holds each picture (and so its surface) for 400 ms.
            usleep(400_000)
        case "keep-all":
            kept.append(frame)
        default:
            break
        }
    }
}

/// Started by replayd as its `replay-capture` (a test puts it there): a compromised capture
/// process, which tries to read, list and write the store (`HOSTILE_STORE`, a movie in it
/// `HOSTILE_MOVIE`) and a file of the system, says on standard error (replayd's log) how each
/// went and what it inherited, and exits 3.
func actAsCaptureProcess() -> Never {
    let environment = ProcessInfo.processInfo.environment
    let store = environment["HOSTILE_STORE"] ?? "/nonexistent", movie = environment["HOSTILE_MOVIE"] ?? "/nonexistent"
    let read = outcome(Int(open(movie, O_RDONLY | O_CLOEXEC)))
    let list = (try? FileManager.default.contentsOfDirectory(atPath: store)).map { "ok \($0)" } ?? outcome(-1)
    let write = outcome(Int(open(store + "/forged.mp4", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)))
    let remove = outcome(Int(unlink(movie)))
    let system = outcome(Int(open("/etc/passwd", O_RDONLY | O_CLOEXEC)))
    FileHandle.standardError.write(Data(("hostile capture process: read=\(read) list=\(list) write=\(write) remove=\(remove) "
        + "system=\(system) inherited=\(inheritedDescriptors.joined(separator: ","))\n").utf8))
    exit(3)
}

if CommandLine.arguments.contains("--channel-fd=3") { actAsCaptureProcess() }
BroadcastExtension.run(HostileHandler())
