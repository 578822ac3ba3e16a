import Glibc
import ReplaySystem
import Testing

@Suite struct SharedSurfaceTests {
    static let socketTypes = [Int32(SOCK_SEQPACKET.rawValue), Int32(SOCK_STREAM.rawValue)]

    /// A connected socketpair of `type`, closed after `body`.
    func withSocketPair<R>(type: Int32 = Int32(SOCK_SEQPACKET.rawValue), _ body: (Int32, Int32) throws -> R) throws -> R {
        var ends: [Int32] = [-1, -1]
        try syscall("socketpair") { socketpair(AF_UNIX, type | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) }
        defer { ends.forEach { close($0) } }
        return try body(ends[0], ends[1])
    }

    /// What the extension gets: a read-only descriptor of `surface`, passed over a socketpair.
    func passReadOnly(_ surface: SharedSurface, type: Int32 = Int32(SOCK_SEQPACKET.rawValue)) throws -> Int32 {
        try withSocketPair(type: type) { daemon, extensionEnd in
            let descriptor = try surface.readOnlyDescriptor()
            defer { close(descriptor) }
            try DescriptorPassing.send(socket: daemon, bytes: [1, 2, 3], descriptors: [descriptor])
            let received = try DescriptorPassing.receive(socket: extensionEnd, maxBytes: 16, maxDescriptors: 4)
            #expect(received.bytes == [1, 2, 3])
            try #require(received.descriptors.count == 1)
            return received.descriptors[0]
        }
    }

    /// The errno a call left if it failed (read before anything else can change it), else nil.
    func errnoOf(_ failed: Bool) -> Int32? { failed ? errno : nil }

    /// Our descriptors whose target is the memfd called `name`.
    func openDescriptors(naming name: String) -> Int {
        guard let directory = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let number = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            var target = [UInt8](repeating: 0, count: 512)
            let length = target.withUnsafeMutableBytes {
                readlink("/proc/self/fd/\(number)", $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count)
            }
            if length > 0, String(decoding: target.prefix(length), as: UTF8.self).hasPrefix("/memfd:\(name) ") { count += 1 }
        }
        return count
    }

    @Test(arguments: socketTypes)
    func daemonWritesAreReadIdenticallyThroughAPassedReadOnlyDescriptor(socketType: Int32) throws {
        let surface = try SharedSurface.create(name: "identical", size: 1 << 16)
        let writable = try #require(surface.mutableBytes)
        for index in writable.indices { writable[index] = UInt8(truncatingIfNeeded: index &* 31 &+ 7) }

        let mapped = try SharedSurface.mapReadOnly(descriptor: try passReadOnly(surface, type: socketType))
        #expect(mapped.size == surface.size)
        #expect(mapped.mutableBytes == nil)
        #expect(mapped.bytes.elementsEqual(surface.bytes))
        // Same memory, not a copy: later writes show through.
        writable[100] = 0xEE
        #expect(mapped.bytes[100] == 0xEE)
    }

    @Test func aReceivedDescriptorCannotBeMappedOrMadeWritable() throws {
        let surface = try SharedSurface.create(name: "writable-map", size: 4096)
        let descriptor = try passReadOnly(surface)
        defer { close(descriptor) }
        #expect(errnoOf(mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0) == MAP_FAILED) == EACCES)

        let readOnly = try SharedSurface.mapReadOnly(descriptor: dup(descriptor))
        let start = UnsafeMutableRawPointer(mutating: readOnly.bytes.baseAddress)
        #expect(errnoOf(mprotect(start, 4096, PROT_READ | PROT_WRITE) == -1) == EACCES)
    }

    /// A receiver can reopen its read-only descriptor read-write through /proc; the seals are
    /// what stop it from resizing or writing.
    @Test func sealedMemoryCannotBeResizedOrWrittenEvenWhenReopenedReadWrite() throws {
        let surface = try SharedSurface.create(name: "sealed", size: 4096)
        let descriptor = try passReadOnly(surface)
        defer { close(descriptor) }
        let reopened = open("/proc/self/fd/\(descriptor)", O_RDWR | O_CLOEXEC)
        try #require(reopened >= 0)
        defer { close(reopened) }

        #expect(errnoOf(ftruncate(reopened, 0) == -1) == EPERM)
        #expect(errnoOf(ftruncate(reopened, 8192) == -1) == EPERM)
        #expect(errnoOf(mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, reopened, 0) == MAP_FAILED) == EPERM)
        #expect(errnoOf(pwrite(reopened, [0xFF], 1, 0) == -1) == EPERM)
        #expect(surface.bytes[0] == 0)
    }

    /// Counts only descriptors of this test's own memfd, so tests running in parallel cannot
    /// disturb the before/after comparison.
    @Test(arguments: [(sent: 1, allowed: 0), (sent: 2, allowed: 1), (sent: 3, allowed: 1), (sent: 8, allowed: 4)])
    func receivingMoreDescriptorsThanAllowedThrowsAndLeaksNone(sent: Int, allowed: Int) throws {
        let name = "leak-probe-\(UInt64.random(in: 0...UInt64.max))"
        try withSocketPair { daemon, extensionEnd in
            do {
                let surface = try SharedSurface.create(name: name, size: 4096)
                let copies = try (0..<sent).map { _ in try surface.readOnlyDescriptor() }
                #expect(openDescriptors(naming: name) == sent + 1)
                try DescriptorPassing.send(socket: daemon, bytes: [7], descriptors: copies)
                copies.forEach { close($0) }
            }
            #expect(openDescriptors(naming: name) == 0)
            #expect(throws: SystemError.self) {
                try DescriptorPassing.receive(socket: extensionEnd, maxBytes: 16, maxDescriptors: allowed)
            }
            #expect(openDescriptors(naming: name) == 0)
        }
    }

    @Test func receiveReturnsEmptyBytesAtEndOfStream() throws {
        try withSocketPair { daemon, extensionEnd in
            shutdown(daemon, Int32(SHUT_WR))
            let received = try DescriptorPassing.receive(socket: extensionEnd, maxBytes: 16, maxDescriptors: 1)
            #expect(received.bytes.isEmpty && received.descriptors.isEmpty)
        }
    }

    /// Python's own mmap refuses writes with an exception, so the child maps the descriptor with
    /// libc through ctypes and memsets it: the store must fault. Core dumps off, so no core file.
    /// python3 comes with scripts/install-deps; without it this fails rather than skips.
    @Test func writingThroughTheReadOnlyMappingKillsTheWriterWithSIGSEGV() throws {
        try #require(access("/usr/bin/python3", X_OK) == 0, "python3 is missing: run scripts/install-deps")
        let surface = try SharedSurface.create(name: "segv", size: 4096)
        let writable = try #require(surface.mutableBytes)
        writable[0] = 0x5A
        let descriptor = try passReadOnly(surface)
        defer { close(descriptor) }
        let script = """
            import ctypes, os, resource, sys
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            libc = ctypes.CDLL(None)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
            address = libc.mmap(None, os.fstat(3).st_size, \(PROT_READ), \(MAP_SHARED), 3, 0)
            if address in (None, 2**64 - 1): sys.exit(2)
            if ctypes.string_at(address, 1) != b"\\x5a": sys.exit(3)
            ctypes.memset(address, 0, 1)
            sys.exit(0)
            """
        let child = try ChildProcess(path: "/usr/bin/python3", arguments: ["-c", script], environment: [:],
                                     inheriting: [(descriptor, 3)])
        let status = child.wait(timeout: 30)
        if status == nil { child.terminate() }
        #expect(status == 128 + SIGSEGV)
        #expect(surface.bytes[0] == 0x5A)
    }
}
