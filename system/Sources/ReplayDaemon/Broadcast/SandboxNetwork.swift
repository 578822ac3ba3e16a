import FoundationEssentials
import ReplayCaptureModel
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// The network of one sandbox: pasta connects the sandbox's own network namespace to the
/// outside, so the extension sees only its own sockets in /proc/net, and of the host's loopback
/// reaches only the ports its setup names (pasta forwards exactly those, `-T`/`-U`), not the
/// pages, other users' pages or other local services. pasta runs as replayd's child and lives
/// as long as the sandbox: `stop()` ends it, and its parent-death signal if replayd dies.
final class SandboxNetwork: Sendable {
    static let pasta = "/usr/bin/pasta"
    static let setpriv = "/usr/bin/setpriv"
    /// NS_GET_USERNS (linux/nsfs.h): the user namespace that owns a namespace, as a descriptor.
    private static let nsGetUserNS: UInt = 0xb701

    private let process: ChildProcess

    /// The log's warning when pasta cannot run (`unavailability`).
    static func warning(_ missing: (reason: String, fix: String)) -> String {
        missing.reason + ": extensions share the host's network; "
            + "Landlock alone limits their TCP connects, and they can read the host's sockets in /proc/net"
    }

    /// Why pasta cannot give extensions a network of their own here, for this process's user,
    /// and what would; nil when it can. It needs /dev/net/tun, which some machines keep from
    /// unprivileged users (the package grants the system daemon's user access to it).
    static func unavailability() -> (reason: String, fix: String)? {
        guard FileManager.default.isExecutableFile(atPath: pasta), FileManager.default.isExecutableFile(atPath: setpriv) else {
            return ("pasta (\(pasta), Debian package passt) is not installed", "apt-get install passt")
        }
        guard access("/dev/net/tun", R_OK | W_OK) == 0 else {
            let why = String(cString: strerror(errno))
            let name = getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) }
            let user = name.map { "'\($0)' (uid \(getuid()))" } ?? "uid \(getuid())"
            return ("/dev/net/tun is not usable by replayd's user \(user) (\(why))",
                    "give that user the device: the package's tmpfiles.d rule does at install and boot, or as root "
                        + "setfacl -m u:\(name ?? String(getuid())):rw /dev/net/tun; in a container, pass the device in")
        }
        return nil
    }

    /// An extension's network, as `replay broadcast status` says it: what it can reach.
    static func description(hostNetworkAsked: Bool, unavailable: (reason: String, fix: String)?) -> String {
        if hostNetworkAsked {
            return "the host's, as its manifest asks (hostNetwork): it sees the host's sockets in /proc/net; Landlock limits its TCP connects"
        }
        guard let unavailable else { return "its own (pasta): of the host, it reaches only the servers its setup names" }
        return "the host's, NOT its own as documented: \(unavailable.reason); it sees the host's sockets in /proc/net and "
            + "reaches loopback UDP services; Landlock alone limits its TCP connects (replayd --check says what is missing)"
    }

    /// The arguments for pasta: no forwarding into the sandbox, and from it to the host's
    /// loopback only the setup's ports. `--no-map-gw`: the gateway's address is not the host.
    static func arguments(policy: ExtensionNetworkPolicy) -> [String] {
        func list(_ ports: [UInt16]) -> String { ports.isEmpty ? "none" : ports.map(String.init).joined(separator: ",") }
        return ["-f", "-q", "--config-net", "--no-map-gw", "-t", "none", "-u", "none",
                "-T", list(policy.connectPorts), "-U", list(policy.udpPorts)]
    }

    private init(process: ChildProcess) { self.process = process }

    /// Starts pasta for the sandbox whose pid 1 is `sandbox` (blocked on bwrap's --block-fd),
    /// and calls `then` once its namespace is configured, so the extension starts with its
    /// network; or with why not. No thread waits meanwhile.
    ///   - blockFD: the descriptor on which the sandbox waits.
    ///   - stderr: where pasta writes, open until `then`.
    static func start(sandbox: Int32, blockFD: Int32, policy: ExtensionNetworkPolicy, stderr: Int32, timers: any Timers,
                      then: @escaping @Sendable (Result<SandboxNetwork, SystemError>) -> Void) {
        // bwrap's child sets up the namespace's loopback before it waits; pasta's netlink
        // requests at the same time made that fail now and then (RTM_NEWADDR).
        whenWaiting(sandbox, on: blockFD, until: timers.now() + 10_000_000_000, timers: timers) {
            let ready: (read: Int32, write: Int32), process: ChildProcess
            do throws(SystemError) {
                ready = try Pipe.make()
                do throws(SystemError) {
                    process = try spawn(sandbox: sandbox, policy: policy, stderr: stderr, ready: ready.write)
                } catch {
                    close(ready.read)
                    throw error
                }
            } catch {
                return then(.failure(error))
            }
            // pasta writes its pid file (here a pipe) once the namespace is configured; it
            // closes the pipe without a word if it fails.
            Pipe.readLine(ready.read, within: 10, on: timers) { line in
                close(ready.read)
                guard line != nil else {
                    process.signal(SIGKILL)
                    process.onExit { _ in }  // reaped when it is gone
                    return then(.failure(SystemError(call: "pasta", errno: ENETUNREACH)))
                }
                then(.success(SandboxNetwork(process: process)))
            }
        }
    }

    /// pasta for `sandbox`'s network namespace, which writes its pid on `ready` (closed here).
    private static func spawn(sandbox: Int32, policy: ExtensionNetworkPolicy, stderr: Int32, ready: Int32) throws(SystemError) -> ChildProcess {
        var inherited = [(ready, Int32(3))]
        defer { close(ready) }
        var target = ["--netns", "/proc/\(sandbox)/ns/net"]
        if geteuid() == 0 {
            // Root needs no user namespace to join the network namespace, and stays root, as
            // pasta's default user (nobody) could not open it.
            target += ["--netns-only", "--runas", "0"]
        } else {
            // Unprivileged bwrap nests user namespaces: the network namespace belongs to the
            // outer one, which no process of the sandbox is in. Its descriptor, handed over.
            let netns = open("/proc/\(sandbox)/ns/net", O_RDONLY | O_CLOEXEC)
            guard netns >= 0 else { throw SystemError(call: "open(/proc/\(sandbox)/ns/net)", errno: errno) }
            let owner = ioctl(netns, Self.nsGetUserNS)
            let error = errno
            close(netns)
            guard owner >= 0 else { throw SystemError(call: "ioctl(NS_GET_USERNS)", errno: error) }
            inherited.append((owner, 4))
            target += ["--userns", "/proc/self/fd/4"]
        }
        defer { for (fd, number) in inherited where number == 4 { close(fd) } }
        // setpriv sets the parent-death signal (the WatcherThread is the parent), which pasta
        // keeps: it dies with replayd, even by SIGKILL. No Landlock domain: one that is not the
        // sandbox's ancestor may not open the sandbox's namespaces; the sandbox's own domain
        // already limits what it connects to through pasta.
        return try ChildProcess(
            confinedPath: setpriv,
            arguments: ["--pdeathsig", "KILL", "--", pasta] + arguments(policy: policy) + target + ["-P", "/dev/fd/3"],
            environment: ["PATH": "/usr/bin:/bin"], landlockScopes: false,
            stderr: .descriptor(stderr), inheriting: inherited)
    }

    /// Ends pasta; the sandbox's network goes with it.
    func stop() {
        process.signal(SIGKILL)
        process.onExit { _ in }  // reaped when it is gone; nothing waits for it
    }

    /// Calls `then` once `pid` is blocked reading descriptor `fd` (/proc: the call's first
    /// argument, and a pipe read as its wait channel), has gone, or `deadline` passed. Nothing
    /// tells when a process starts to wait: /proc is looked at again 2 ms later, by a timer.
    private static func whenWaiting(_ pid: Int32, on fd: Int32, until deadline: Int64, timers: any Timers,
                                    then: @escaping @Sendable () -> Void) {
        let call = (try? String(contentsOfFile: "/proc/\(pid)/syscall", encoding: .utf8)) ?? ""
        let channel = (try? String(contentsOfFile: "/proc/\(pid)/wchan", encoding: .utf8)) ?? ""
        let fields = call.split(separator: " ")
        let waiting = fields.count > 1 && fields[1] == "0x" + String(fd, radix: 16) && channel.contains("pipe_read")
        guard !waiting, !(call.isEmpty && channel.isEmpty), timers.now() < deadline else { return then() }
        timers.after(0.002) { whenWaiting(pid, on: fd, until: deadline, timers: timers, then: then) }
    }
}
