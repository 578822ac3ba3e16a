#if canImport(Glibc)
import Glibc
#endif

/// systemd's socket activation (the `sd_listen_fds` protocol), without libsystemd: a service
/// manager that made the listening socket passes it as descriptor 3 and says so in
/// `LISTEN_PID` (the pid it is meant for) and `LISTEN_FDS` (how many, from 3 on).
public enum SocketActivation {
    /// The first descriptor passed (`SD_LISTEN_FDS_START`).
    public static let firstDescriptor: Int32 = 3

    /// The variables of the protocol; all are removed once read, so children never see them.
    public static let variables = ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"]

    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// A variable that is not a number (or a negative count).
        case malformed(variable: String, value: String)
        /// More than the one listening socket replayd serves.
        case tooMany(Int)
        /// Descriptor 3 is not what it should be (a listening AF_UNIX SOCK_STREAM socket).
        case notAListeningUnixSocket(String)

        public var description: String {
            switch self {
            case .malformed(let variable, let value):
                "socket activation: \(variable)='\(value)' is not a number"
            case .tooMany(let count):
                "socket activation: \(count) sockets passed (LISTEN_FDS), but replayd listens on exactly one; give the socket unit one ListenStream="
            case .notAListeningUnixSocket(let why):
                "socket activation: descriptor 3 is not a listening Unix stream socket (\(why)); the socket unit needs ListenStream=/a/path"
            }
        }
    }

    /// The passed descriptor `environment` announces for the process `pid`, or nil when it
    /// announces none for it: no `LISTEN_PID`/`LISTEN_FDS`, another process's pid (the
    /// variables were meant for a parent), or a count of 0. Pure: it reads nothing else.
    public static func descriptor(environment: [String: String], pid: Int32) throws(Failure) -> Int32? {
        guard let pidText = environment["LISTEN_PID"], let countText = environment["LISTEN_FDS"] else { return nil }
        guard let listenPID = Int32(pidText), listenPID > 0 else {
            throw .malformed(variable: "LISTEN_PID", value: pidText)
        }
        guard listenPID == pid else { return nil }
        guard let count = Int(countText), count >= 0 else {
            throw .malformed(variable: "LISTEN_FDS", value: countText)
        }
        if count == 0 { return nil }
        if count > 1 { throw .tooMany(count) }
        return firstDescriptor
    }

    /// The listening socket this process was handed, checked, close-on-exec and non-blocking, or nil
    /// when it was started the ordinary way. The protocol's variables are removed either way.
    public static func adoptListener() throws -> Int32? {
        var environment: [String: String] = [:]
        for name in variables {
            if let value = getenv(name) { environment[name] = String(cString: value) }
            unsetenv(name)
        }
        guard let fd = try descriptor(environment: environment, pid: getpid()) else { return nil }
        let flags = fcntl(fd, F_GETFD)
        guard flags >= 0 else { throw Failure.notAListeningUnixSocket("descriptor 3 is not open") }
        try syscall("fcntl(3, F_SETFD, FD_CLOEXEC)") { fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        try checkListeningUnixStream(fd)
        // Non-blocking, so a client that vanished between poll() and accept() cannot stall the
        // accept thread (and a stop with it); the manager only polls this socket, never accepts.
        let status = fcntl(fd, F_GETFL)
        if status >= 0 { _ = fcntl(fd, F_SETFL, status | O_NONBLOCK) }
        return fd
    }

    /// Refuses anything but a listening AF_UNIX SOCK_STREAM socket.
    public static func checkListeningUnixStream(_ fd: Int32) throws(Failure) {
        func option(_ name: Int32) -> Int32? {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(fd, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
        }
        guard let domain = option(SO_DOMAIN) else {
            throw .notAListeningUnixSocket("not a socket: \(String(cString: strerror(errno)))")
        }
        guard domain == AF_UNIX else { throw .notAListeningUnixSocket("address family \(domain), not AF_UNIX") }
        guard option(SO_TYPE) == Int32(SOCK_STREAM.rawValue) else { throw .notAListeningUnixSocket("not SOCK_STREAM") }
        guard option(SO_ACCEPTCONN) == 1 else { throw .notAListeningUnixSocket("not listening") }
    }

    /// The path a Unix socket is bound to; nil for an unbound or abstract one.
    public static func boundPath(_ fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let got = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard got == 0, Int(length) > MemoryLayout<sa_family_t>.size else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { raw in
            String(decoding: raw.prefix(Int(length) - MemoryLayout<sa_family_t>.size).prefix { $0 != 0 }, as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }
}
