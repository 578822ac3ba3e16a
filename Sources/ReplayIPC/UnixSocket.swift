#if canImport(Glibc)
import Glibc
#endif
import CShims
public import ReplaySystem

/// Listening and connecting Unix stream sockets, close-on-exec from the start.
public enum UnixSocket {
    /// Binds and listens on `path`, replacing a stale socket file left by a crashed daemon.
    /// The socket file is private to the daemon's user (mode 0600) unless `mode` says otherwise.
    public static func listen(path: String, mode: UInt32 = 0o600, backlog: Int32 = 16) throws(SystemError) -> Int32 {
        let fd = try syscall("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            unlink(path)
            _ = try withAddress(path) { address, length throws(SystemError) in
                try syscall("bind(\(path))") { bind(fd, address, length) }
            }
            try syscall("chmod(\(path))") { chmod(path, mode) }
            try syscall("listen") { Glibc.listen(fd, backlog) }
            return fd
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    public static func connect(path: String) throws(SystemError) -> Int32 {
        let fd = try syscall("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            _ = try withAddress(path) { address, length throws(SystemError) in
                try syscall("connect(\(path))") { Glibc.connect(fd, address, length) }
            }
            return fd
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// Whether a server listens on `path`: connects and hangs up at once. A server binds (the
    /// file appears) before it listens, so the file alone does not say it is ready.
    public static func acceptsConnections(path: String) -> Bool {
        guard let fd = try? connect(path: path) else { return false }
        Glibc.close(fd)
        return true
    }

    public static func accept(_ listener: Int32) throws(SystemError) -> Int32 {
        try syscall("accept4") { CShims_accept_cloexec(listener) }
    }

    private static func withAddress<R>(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(SystemError) -> R
    ) throws(SystemError) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { throw SystemError(call: "socket path too long: \(path)", errno: ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        return try withUnsafePointer(to: &address) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SystemError) in
                try body(address, length)
            }
        }
    }
}
