import CShims

/// What sockets hold in the kernel (unread data, unsent data, reservations), which no
/// process's memory shows: a program that writes to itself and never reads keeps megabytes
/// per socket there.
public enum SocketMemory {
    /// Bytes held per socket inode, for every unix, TCP and UDP socket in this network
    /// namespace that holds any (`CShims_list_socket_memory`); nil if the kernel would not say.
    /// - Parameter diag: a NETLINK_SOCK_DIAG socket of another network namespace
    ///   (`diagSocket(of:)`), whose sockets it lists instead.
    public static func byInode(diag: Int32? = nil) -> [UInt64: Int]? {
        var capacity = 256
        while true {
            var entries = [CShims_socket_memory](repeating: CShims_socket_memory(), count: capacity)
            let count = Int(diag.map { CShims_list_socket_memory_on($0, &entries, capacity) } ?? CShims_list_socket_memory(&entries, capacity))
            guard count >= 0 else { return nil }
            if count <= capacity {
                return Dictionary(entries.prefix(count).map { (UInt64($0.inode), Int($0.bytes)) }, uniquingKeysWith: +)
            }
            capacity = count + 64
        }
    }

    /// A NETLINK_SOCK_DIAG socket in the network namespace of process `pid` (a sandbox with a
    /// network of its own), for `byInode(diag:)`; the caller closes it.
    public static func diagSocket(of pid: Int32) throws(SystemError) -> Int32 {
        let fd = CShims_sock_diag_socket_of(pid)
        guard fd >= 0 else { throw SystemError(call: "sock_diag socket in the namespace of \(pid)", errno: -fd) }
        return fd
    }
}
