import CShims
#if canImport(Glibc)
import Glibc
#endif

/// Shared memory for frames on their way to an upload extension (the IOSurface analogue):
/// a memfd mapped read-write by the daemon and read-only by the extension, so the extension
/// reads frames without copies and can never write into them.
public final class SharedSurface: @unchecked Sendable {
    // @unchecked: nothing here changes after init (pointers are not Sendable, hence the
    // annotation). The memory itself is shared with another process, which no Swift type
    // can make race-free: who writes when is the transport protocol's job.
    public let size: Int
    private let descriptor: FileDescriptor
    private let mapping: UnsafeMutableRawPointer
    private let writable: Bool

    /// Maps `descriptor`, which it owns from here on (closed if mapping fails).
    private init(descriptor: consuming FileDescriptor, size: Int, writable: Bool) throws(SystemError) {
        let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
        let mapping = mmap(nil, size, protection, MAP_SHARED, descriptor.rawValue, 0)
        guard let mapping, mapping != MAP_FAILED else { throw SystemError(call: "mmap", errno: errno) }
        self.descriptor = descriptor
        self.size = size
        self.mapping = mapping
        self.writable = writable
    }

    deinit { munmap(mapping, size) }

    /// The daemon's side: `size` bytes of fresh memory, mapped read-write.
    ///
    /// Sealed after mapping: SHRINK and GROW so no holder can make a mapping fault by
    /// truncating, FUTURE_WRITE so nobody can map it writable or write() to it from now on
    /// (our mapping stays writable). Without FUTURE_WRITE a receiver could reopen its
    /// read-only descriptor read-write through /proc/self/fd and write after all.
    public static func create(name: String, size: Int) throws(SystemError) -> SharedSurface {
        let memory = FileDescriptor(owning: try syscall("memfd_create") {
            CShims_memfd_create(name, CShims_MFD_CLOEXEC | CShims_MFD_ALLOW_SEALING)
        })
        try memory.truncate(to: Int64(size))
        let surface = try SharedSurface(descriptor: memory, size: size, writable: true)
        let seals = CShims_F_SEAL_SHRINK | CShims_F_SEAL_GROW | CShims_F_SEAL_FUTURE_WRITE | CShims_F_SEAL_SEAL
        try syscall("fcntl(F_ADD_SEALS)") { fcntl(surface.descriptor.rawValue, CShims_F_ADD_SEALS, seals) }
        return surface
    }

    /// A new read-only descriptor of the same memory, to send to the extension; the caller
    /// owns it. It is a new open file description, not a dup: a dup would share our
    /// read-write mode. With it, mmap(PROT_WRITE, MAP_SHARED) fails with EACCES.
    public func readOnlyDescriptor() throws(SystemError) -> Int32 {
        let path = "/proc/self/fd/\(descriptor.rawValue)"
        return try syscall("open(\(path))") { open(path, O_RDONLY | O_CLOEXEC) }
    }

    /// The extension's side: maps a received descriptor read-only, sized by fstat. Takes
    /// ownership of `descriptor`, also when it throws.
    public static func mapReadOnly(descriptor: Int32) throws(SystemError) -> SharedSurface {
        let owned = FileDescriptor(owning: descriptor)
        var information = stat()
        try syscall("fstat") { fstat(owned.rawValue, &information) }
        return try SharedSurface(descriptor: owned, size: Int(information.st_size), writable: false)
    }

    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: mapping, count: size) }

    /// nil for a read-only mapping.
    public var mutableBytes: UnsafeMutableRawBufferPointer? {
        writable ? UnsafeMutableRawBufferPointer(start: mapping, count: size) : nil
    }
}
