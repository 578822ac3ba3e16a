import Dispatch
import FoundationEssentials
import Logging
import ReplayCaptureModel
import ReplayIPC
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One upload extension, running in a bubblewrap sandbox: the whole system read-only, no
/// home directories, no store, no daemon sockets, a small private /tmp and /dev/shm, its own
/// process and IPC namespaces, no capabilities; its own network namespace, connected by pasta
/// (`SandboxNetwork`), or the host's where pasta cannot run. bwrap itself
/// starts confined (`ChildProcess(confinedPath:)`): Landlock keeps it from the host's abstract
/// unix sockets (the X server's among them), from signalling outside and from TCP ports its
/// setup does not name (`ExtensionNetworkPolicy`), seccomp from ptrace and other processes'
/// memory. The extension gets a second seccomp program (`SandboxFilter`): no namespaces,
/// mounts or memfds of its own. Its memory and processes are watched: `usage()` is what the
/// limits are checked against.
final class ExtensionProcess: ExtensionLink {
    /// ReplayKit's limit for broadcast upload extensions.
    static let memoryLimit = BroadcastLimits.memory
    /// More processes than an uploader needs (it runs one, perhaps a helper): a fork bomb.
    static let processLimit = BroadcastLimits.processes
    /// Each of its two writable tmpfs (/tmp, /dev/shm). Their contents count against
    /// `memoryLimit` as they fill, so the watchdog stops it there; the size bounds what it can
    /// write between two ticks, and keeps it off the host's memory if the watchdog is late.
    static let tmpfsSize = 64 * 1024 * 1024

    let process: ChildProcess
    /// The sandbox's pid 1, as our pid namespace numbers it.
    private let sandboxInit: Int32?
    private let statusPipe: Int32
    /// pasta, for a sandbox with a network namespace of its own.
    private let network: SandboxNetwork?
    /// Its network in words, for its broadcast's status (`SandboxNetwork.description`).
    let sandboxNetwork: String
    /// A sock_diag socket in that namespace: its sockets are listed only there.
    private let socketDiag: Int32?
    /// Its standard error, relayed into the daemon's log.
    private let output: ExtensionOutput
    /// Our end of the SOCK_SEQPACKET connection; the extension has the other as descriptor 3.
    let socket: Int32
    /// Reads the socket when it is readable; its cancel handler closes the socket.
    private let listener = Mutex<ReadableWatch?>(nil)
    private let closed = Mutex(false)
    /// The memfds replayd handed it (surfaces, the audio ring): replayd's memory, not its.
    private let lent = Mutex(Set<FileIdentity>())
    /// Its cgroup v2, where the kernel offers one: the kernel then counts and kills too.
    private let cgroup: SandboxCgroup?

    /// Starts an extension, and calls `started` once, with it running or with why it could
    /// not start (nothing left running then). No thread waits meanwhile: bwrap's word and
    /// pasta's are read as they come.
    /// - Parameters:
    ///   - hidden: directories the extension must not see (the store, the daemon's sockets).
    ///   - writable: directories the person chose for it (setup fields of kind `directory`).
    ///   - network: the TCP ports it may connect to.
    static func start(manifest: ExtensionManifest, hidden: [String], writable: [String], network: ExtensionNetworkPolicy,
                      redaction: SecretRedaction, timers: any Timers, logger: Logger,
                      started: @escaping @Sendable (Result<ExtensionProcess, DaemonError>) -> Void) {
        let sandbox: StartingSandbox
        do throws(DaemonError) {
            sandbox = try StartingSandbox(manifest: manifest, hidden: hidden, writable: writable, network: network, redaction: redaction,
                                          timers: timers, logger: logger)
        } catch {
            return started(.failure(error))
        }
        // bwrap says on `status` which pid the sandbox's init got in our namespace.
        Pipe.readLine(sandbox.status, within: 10, on: timers) { line in
            let sandboxInit = line.flatMap(Self.childPID(statusLine:))
            let cgroup = Self.confine([sandbox.process.pid] + (sandboxInit.map { [$0] } ?? []), extensionID: manifest.id,
                                      timers: timers, logger: logger)
            guard sandbox.ownNetwork else {
                return started(.success(sandbox.release(sandboxInit: sandboxInit, network: nil, cgroup: cgroup)))
            }
            guard let sandboxInit else {
                return started(.failure(sandbox.abandon(sandboxInit: nil, cgroup: cgroup, why: SystemError(call: "bwrap --json-status-fd", errno: ESRCH))))
            }
            SandboxNetwork.start(sandbox: sandboxInit, blockFD: 6, policy: network, stderr: sandbox.errorsWrite, timers: timers) { result in
                switch result {
                case .success(let network):
                    started(.success(sandbox.release(sandboxInit: sandboxInit, network: network, cgroup: cgroup)))
                case .failure(let error):
                    started(.failure(sandbox.abandon(sandboxInit: sandboxInit, cgroup: cgroup, why: error)))
                }
            }
        }
    }

    /// bwrap running, its sandbox's init blocked on `--block-fd` until `release`: the
    /// descriptors between the two, which one of them closes.
    private final class StartingSandbox: Sendable {
        let manifest: ExtensionManifest
        /// What every line the extension prints passes through before it is logged.
        let redaction: SecretRedaction
        let logger: Logger
        let timers: any Timers
        let process: ChildProcess
        let ownNetwork: Bool
        /// What network the extension gets, for the broadcast's status.
        let networkDescription: String
        /// Our ends: the connection, bwrap's status (read), the extension's standard error.
        let socket: Int32, status: Int32, errorsRead: Int32
        /// Kept until the extension is released or abandoned: pasta writes on `errorsWrite`
        /// too, and the sandbox waits on the other end of `releaseWrite`.
        let errorsWrite: Int32, releaseRead: Int32, releaseWrite: Int32

        init(manifest: ExtensionManifest, hidden: [String], writable: [String], network: ExtensionNetworkPolicy,
             redaction: SecretRedaction, timers: any Timers, logger: Logger) throws(DaemonError) {
            self.manifest = manifest
            self.redaction = redaction
            self.logger = logger
            self.timers = timers
            guard FileManager.default.isExecutableFile(atPath: ExtensionProcess.bubblewrap) else {
                throw DaemonError(code: .captureFailed,
                                  message: "bubblewrap (\(ExtensionProcess.bubblewrap)) is not installed; extensions only run sandboxed")
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
            // bwrap says on `status` which pid the sandbox's init got in our namespace; the
            // extension starts once a byte arrives on `release`, after its cgroup is set.
            let status: (read: Int32, write: Int32), errors: (read: Int32, write: Int32), release: (read: Int32, write: Int32)
            do {
                status = try Pipe.make()
                errors = try Pipe.make()
                release = try Pipe.make()
            } catch {
                Glibc.close(fds[0])
                throw DaemonError(code: .captureFailed, message: "cannot start extension '\(manifest.id)': \(error)")
            }
            // Everything but the extension's end of the connection, when bwrap cannot start.
            let closeOurs = { [fds[0], status.read, status.write, errors.read, errors.write, release.read, release.write].forEach { _ = Glibc.close($0) } }
            let filter: Int32
            do {
                filter = try SandboxFilter.descriptor()
            } catch {
                closeOurs()
                throw DaemonError(code: .captureFailed, message: "cannot start extension '\(manifest.id)': \(error)")
            }
            defer { Glibc.close(filter) }
            // A network namespace of its own, through pasta, unless it serves peers on the host's
            // own network (the manifest's hostNetwork: WebRTC) or pasta cannot run here.
            let missing = manifest.hostNetwork ? nil : SandboxNetwork.unavailability()
            if let missing, !ExtensionProcess.warnedNetwork.exchange(true, ordering: .relaxed) { logger.warning("\(SandboxNetwork.warning(missing))") }
            networkDescription = SandboxNetwork.description(hostNetworkAsked: manifest.hostNetwork, unavailable: missing)
            let ownNetwork = !manifest.hostNetwork && missing == nil
            let arguments = ExtensionProcess.sandboxArguments(executable: manifest.executable, hidden: hidden, writable: writable,
                                                              ownNetwork: ownNetwork)
            let scopes = ExtensionProcess.landlockScopes(abi: ExtensionProcess.landlockABI)
            if let warning = scopes.warning, !ExtensionProcess.warned.exchange(true, ordering: .relaxed) { logger.warning("\(warning)") }
            let connects = ExtensionProcess.landlockConnectRules(abi: ExtensionProcess.landlockABI)
            if let warning = connects.warning, !ExtensionProcess.warnedConnects.exchange(true, ordering: .relaxed) { logger.warning("\(warning)") }
            do {
                process = try ChildProcess(
                    confinedPath: ExtensionProcess.bubblewrap,
                    arguments: ["--json-status-fd", "4", "--add-seccomp-fd", "5", "--block-fd", "6"] + arguments + ["--", manifest.executable],
                    environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "OPENREPLAYKIT_BROADCAST_FD": "3",
                                  BroadcastCodec.minorVersionVariable: "\(BroadcastCodec.minorVersion)"],
                    landlockScopes: scopes.enabled, tcpConnectPorts: connects.enabled ? network.connectPorts : nil,
                    stderr: .descriptor(errors.write), inheriting: [(fds[1], 3), (status.write, 4), (filter, 5), (release.read, 6)])
            } catch {
                closeOurs()
                throw DaemonError(code: .captureFailed, message: "cannot start extension '\(manifest.id)': \(error)")
            }
            Glibc.close(status.write)
            self.ownNetwork = ownNetwork
            socket = fds[0]
            self.status = status.read
            errorsRead = errors.read
            errorsWrite = errors.write
            releaseRead = release.read
            releaseWrite = release.write
        }

        /// Lets the extension run: it starts once a byte arrives on `release`.
        func release(sandboxInit: Int32?, network: SandboxNetwork?, cgroup: SandboxCgroup?) -> ExtensionProcess {
            let socketDiag: Int32?
            do throws(SystemError) {
                socketDiag = try network == nil ? nil : sandboxInit.map(SocketMemory.diagSocket(of:))
            } catch {
                socketDiag = nil
                logger.warning("the memory of extension '\(manifest.id)''s sockets is not counted: \(error)")
            }
            _ = Glibc.write(releaseWrite, "1", 1)
            [errorsWrite, releaseRead, releaseWrite].forEach { _ = Glibc.close($0) }
            // The status pipe is kept open while bwrap runs: it writes its exit status there
            // last, and a closed pipe would end it with SIGPIPE instead of the extension's own.
            return ExtensionProcess(process: process, sandboxInit: sandboxInit, statusPipe: status, network: network,
                                    networkDescription: networkDescription, socketDiag: socketDiag,
                                    output: ExtensionOutput(fd: errorsRead, extensionID: manifest.id, redaction: redaction, timers: timers,
                                                            logger: logger),
                                    socket: socket, cgroup: cgroup)
        }

        /// Ends it before the extension ran (pasta failed): why, in the person's words.
        func abandon(sandboxInit: Int32?, cgroup: SandboxCgroup?, why error: SystemError) -> DaemonError {
            [errorsWrite, releaseRead, releaseWrite].forEach { _ = Glibc.close($0) }
            // What pasta said is all there is on the pipe yet: the extension has not run.
            let said = ExtensionProcess.pending(errorsRead).split(separator: "\n").filter { !$0.hasPrefix("Failed to send") }.last
            if let sandboxInit { Glibc.kill(sandboxInit, SIGKILL) }
            process.signal(SIGKILL)
            process.onExit { _ in }  // reaped when it is gone; its cgroup is emptied by cgroup.kill meanwhile
            cgroup?.remove()
            [socket, status, errorsRead].forEach { _ = Glibc.close($0) }
            return DaemonError(code: .captureFailed,
                               message: "cannot give extension '\(manifest.id)' its network (pasta): \(said.map(String.init) ?? "\(error)")")
        }
    }

    private init(process: ChildProcess, sandboxInit: Int32?, statusPipe: Int32, network: SandboxNetwork?, networkDescription: String,
                 socketDiag: Int32?, output: ExtensionOutput, socket: Int32, cgroup: SandboxCgroup?) {
        self.process = process
        self.sandboxInit = sandboxInit
        self.statusPipe = statusPipe
        self.network = network
        sandboxNetwork = networkDescription
        self.socketDiag = socketDiag
        self.output = output
        self.socket = socket
        self.cgroup = cgroup
    }

    /// The kernel's count, where cgroup v2 is delegated to replayd; set up at the first broadcast.
    static let cgroups = SandboxCgroups.detect()

    /// Puts bwrap and the sandbox's init, before the extension runs, into a cgroup of their own.
    private static func confine(_ pids: [Int32], extensionID: String, timers: any Timers, logger: Logger) -> SandboxCgroup? {
        guard case .offered(let cgroups) = Self.cgroups else { return nil }
        let name = "extension-\(extensionID.filter { $0.isLetter || $0.isNumber || $0 == "-" })-\(pids[0])"
        // pids.max counts threads too: an uploader (GStreamer, FFmpeg) runs dozens of them.
        let group = cgroups.confine(pids, name: name, memoryLimit: memoryLimit, processLimit: 4 * processLimit, timers: timers)
        if group == nil { logger.warning("cannot put extension '\(extensionID)' in a cgroup of its own: the walk alone counts its memory") }
        return group
    }

    static let landlockABI = ChildProcess.landlockABI
    private static let warned = Atomic(false)
    private static let warnedConnects = Atomic(false)
    private static let warnedNetwork = Atomic(false)

    /// Whether bwrap starts inside a Landlock domain scoping abstract unix sockets and signals
    /// (ABI 6, Linux 6.12); if not, why, in words for the log. Without it an extension can
    /// still reach the X server through its abstract socket: the rest of the sandbox stands.
    static func landlockScopes(abi: Int) -> (enabled: Bool, warning: String?) {
        guard abi < 6 else { return (true, nil) }
        let offered = abi == 0 ? "no Landlock" : "Landlock ABI \(abi)"
        return (false, "this kernel offers \(offered), not ABI 6 (Linux 6.12): extensions run without abstract unix socket "
            + "and signal scoping, so one could reach host services listening on abstract sockets, such as the X server")
    }

    /// Whether the extension's TCP connects are limited to its setup's ports (Landlock network
    /// rules, ABI 4, Linux 6.7); if not, why, in words for the log.
    static func landlockConnectRules(abi: Int) -> (enabled: Bool, warning: String?) {
        guard abi < 4 else { return (true, nil) }
        let offered = abi == 0 ? "no Landlock" : "Landlock ABI \(abi)"
        return (false, "this kernel offers \(offered), not ABI 4 (Linux 6.7): extensions' TCP connects are not limited to "
            + "the ports their setup names, so one could reach any local service listening on TCP, other users' among them")
    }

    /// What a pipe holds now, without waiting.
    private static func pending(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        while bytes.count < 65536, FileDescriptor.isReadable(fd) {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The pid in the first line bwrap writes on its status descriptor: `{ "child-pid": N }`.
    private static func childPID(statusLine text: String) -> Int32? {
        struct Status: Decodable {
            let childPID: Int32
            enum CodingKeys: String, CodingKey { case childPID = "child-pid" }
        }
        return (try? JSONDecoder().decode(Status.self, from: Data(text.utf8)))?.childPID
    }

    deinit {
        network?.stop()
        if let socketDiag { Glibc.close(socketDiag) }
        if !closed.withLock({ $0 }) { Glibc.close(socket) }
        Glibc.close(statusPipe)
        output.close()
    }

    func send(_ bytes: [UInt8], descriptors: [Int32]) -> Bool {
        if !descriptors.isEmpty {
            let identities = descriptors.compactMap(FileIdentity.init(descriptor:))
            lent.withLock { $0.formUnion(identities) }
        }
        // Under the lock: a closed socket's number may already name another descriptor.
        return closed.withLock { closed in
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

    func onExit(_ handler: @escaping @Sendable (String) -> Void) {
        process.onExit { [self] _ in
            let how = exitDescription ?? "exited"
            network?.stop()
            // Reported once its cgroup is gone and its last words are in the log (its standard
            // error ends once pasta, its other writer, is gone too): nothing of the sandbox is
            // left by then, and its broadcast's end is logged after them.
            let report: @Sendable () -> Void = { [output] in output.whenEnded(within: 2) { handler(how) } }
            guard let cgroup else { return report() }
            cgroup.remove(then: report)
        }
    }

    func close() {
        if let listener = listener.withLock({ $0 }) { listener.cancel() } else { closeSocket() }
    }

    private func closeSocket() {
        if !closed.withLock({ state in defer { state = true }; return state }) { Glibc.close(socket) }
    }

    static let bubblewrap = "/usr/bin/bwrap"

    /// Whether this bwrap has `--disable-userns` (0.8): an older one refuses to start with it.
    static let disablesUserNamespaces: Bool = {
        guard let pipe = try? Pipe.make() else { return false }
        let output = FileDescriptor(owning: pipe.read)
        let process = try? ChildProcess(path: bubblewrap, arguments: ["--version"], environment: ChildProcess.environment(adding: [:]),
                                        stdout: .descriptor(pipe.write))
        Glibc.close(pipe.write)
        guard let process else { return false }
        let text = String(decoding: (try? output.read(upTo: 4096)) ?? [], as: UTF8.self)
        _ = process.wait()
        // "bubblewrap 0.8.0"
        let version = (text.split(separator: " ").last ?? "").split(separator: ".").compactMap { Int($0.trimmingWhitespace()) }
        return version.count >= 2 && (version[0], version[1]) >= (0, 8)
    }()

    /// What an uploader needs of the host's /etc, and all it sees of it: certificates (never
    /// /etc/ssl/private), the resolver's and the hosts files, the time zone, the loader's cache,
    /// and the alternatives' links some libraries are reached through. Nothing of the system's
    /// or other users' secrets (shadow, keys, passwd), whoever runs replayd, root included.
    static let hostConfiguration = [
        "/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/gnutls", "/etc/resolv.conf", "/etc/hosts", "/etc/host.conf",
        "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/protocols", "/etc/services", "/etc/localtime", "/etc/timezone",
        "/etc/ld.so.cache", "/etc/alternatives",
    ]

    /// Folders of the host an extension has no business in: their files are the system's and
    /// the people's (/var/backups keeps a copy of shadow), never an uploader's.
    static let hostPrivateFolders = ["/boot", "/home", "/media", "/mnt", "/root", "/run", "/srv", "/var"]

    /// - Parameter ownNetwork: a network namespace of its own (for pasta), else the host's.
    /// - Parameter runtime: the Swift runtime folder the shipped extensions load (`SwiftRuntimeFolder`).
    static func sandboxArguments(executable: String, hidden: [String], writable: [String], ownNetwork: Bool,
                                 runtime: String? = SwiftRuntimeFolder.loaded) -> [String] {
        let size = String(tmpfsSize)
        // Only /tmp and /dev/shm are writable, sized, and counted (`privateStorage`); the
        // other tmpfs hide what is under them and become read-only once mounted on.
        // Parents first, so a cover inside another (the store in the socket folder) is not hidden by it.
        let covers = Set(["/etc"] + hostPrivateFolders + hidden.filter { FileManager.default.fileExists(atPath: $0) }).sorted()
        var arguments = [
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", "/dev/shm",
            // bwrap is started from a thread that lives as long as replayd (`WatcherThread`):
            // the sandbox dies with replayd, even by SIGKILL.
            "--die-with-parent", "--unshare-all", "--new-session", "--cap-drop", "ALL",
        ]
        // No user namespace inside (a nested one could mount a tmpfs that nobody counts); the
        // seccomp program bwrap is handed refuses them too, and every mount, on any bwrap.
        if disablesUserNamespaces { arguments += ["--unshare-user", "--disable-userns"] }
        if !ownNetwork { arguments.append("--share-net") }
        for path in covers { arguments += ["--tmpfs", path] }
        // Of /etc, only what an uploader needs comes back, read-only (a link's target, as it is now).
        for path in hostConfiguration { arguments += ["--ro-bind-try", path, path] }
        // Its own executable stays visible even when it lives under a hidden directory.
        let folder = URL(fileURLWithPath: executable).deletingLastPathComponent().path
        arguments += ["--ro-bind", folder, folder]
        if let runtime, runtime != folder { arguments += ["--ro-bind", runtime, runtime] }
        for path in writable { arguments += ["--bind", path, path] }
        for path in ["/dev"] + covers { arguments += ["--remount-ro", path] }
        return arguments
    }

    /// Who counts, for `replay broadcast status`: the kernel through cgroup v2 where it is
    /// delegated to replayd, and the walk always.
    static var memoryCounting: String {
        let walk = "replayd's walk of the sandbox's processes, memory, sockets and tmpfs every 50 ms"
        switch cgroups {
        case .offered: return "the kernel (a cgroup v2 of its own: memory.max \(memoryLimit >> 20) MiB, no swap) and " + walk
        case .notOffered(let why): return walk + " (not the kernel's cgroup v2 limits: \(why))"
        }
    }

    /// What the sandbox holds (`SandboxUsage`): without cgroup v2 controllers this walk is the
    /// only count.
    func usage() -> ExtensionUsage {
        SandboxUsage.measure(bwrap: process.pid, storageRoot: process.isRunning ? sandboxInit : nil,
                             lent: lent.withLock { $0 }, processLimit: Self.processLimit, socketDiag: socketDiag)
    }

    /// Ends the whole sandbox: SIGKILL to its init (pid 1 of its pid namespace) takes every
    /// process inside with it, whatever the extension forked; then bwrap itself. The init's pid
    /// is used only while bwrap, its parent, still runs: bwrap exits as soon as its init does,
    /// so the pid is not one reused by another process by then.
    func kill() {
        if let cgroup { _ = SandboxCgroups.write("1", to: cgroup.path + "/cgroup.kill") }
        if let sandboxInit, process.isRunning { Glibc.kill(sandboxInit, SIGKILL) }
        process.signal(SIGKILL)
        network?.stop()
    }

    /// Why it ended, in words a person can act on; nil while it runs.
    var exitDescription: String? {
        guard let status = process.terminationStatus else { return nil }
        if let cgroup, cgroup.killedAtMemoryLimit {
            return "used more than \(BroadcastLimits.mebibytes(Self.memoryLimit)) of memory and was killed by the kernel (its cgroup's memory.max)"
        }
        if let signal = ChildProcess.signalName(ofStatus: status) { return "crashed (\(signal))" }
        return status == 0 ? "exited" : "exited with status \(status)"
    }
}
