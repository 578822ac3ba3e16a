import CShims

/// What sockets hold in the kernel (unread data, unsent data, reservations), which no
/// process's memory shows: a program that writes to itself and never reads keeps megabytes
/// per socket there.
public enum SocketMemory {
    /// Bytes held per socket inode, for every unix, TCP and UDP socket in this network
    /// namespace that holds any (`CShims_list_socket_memory`); nil if the kernel would not say.
    public static func byInode() -> [UInt64: Int]? {
        var capacity = 256
        while true {
            var entries = [CShims_socket_memory](repeating: CShims_socket_memory(), count: capacity)
            let count = Int(CShims_list_socket_memory(&entries, capacity))
            guard count >= 0 else { return nil }
            if count <= capacity {
                return Dictionary(entries.prefix(count).map { (UInt64($0.inode), Int($0.bytes)) }, uniquingKeysWith: +)
            }
            capacity = count + 64
        }
    }
}
