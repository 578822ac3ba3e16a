import Foundation
import ReplaySystem
import Testing

@Suite struct ProcessMemoryTests {
    /// The code and constants of the program and its libraries leave the resident set (its file
    /// pages drop) and map back in as they run: the process goes on calling into them.
    @Test func droppingCodePagesGivesThemBackAndTheProcessRunsOn() throws {
        // Resident less anonymous: the mapped pages of files, the executable's among them.
        let before = try #require(ProcessMemory.resident().map { $0.total - $0.anonymous })
        let spanned = ProcessMemory.dropCodePages()
        let after = try #require(ProcessMemory.resident().map { $0.total - $0.anonymous })
        #expect(spanned > 0)
        #expect(after < before, "resident file pages \(before) bytes before, \(after) after")
        // Code that was unmapped runs again.
        var limit = RateLimit(perSecond: 1)
        #expect(limit.admit(now: 0) == 0)
        #expect(ProcessMemory.resident() != nil)
        // The libraries' read-only data reads back as it was: C's formatting tables, and the
        // Swift runtime's type metadata (a string's description goes through both).
        #expect(String(describing: 12.5) == "12.5")
        #expect("\(Double.pi)".hasPrefix("3.14159"))
    }

    /// A mapping registered with `mapOnePagePerFault` gets the pages that are read and no more;
    /// its twin, not registered, gets the 64 KB around each (fault-around), which is what made
    /// a process's code pages several times what it runs. Each mapping's own `Rss` in
    /// /proc/self/smaps is read, so the other tests running meanwhile do not count.
    @Test(.enabled(if: !Self.kernelRelease.lexicographicallyPrecedes([6, 7]), "asynchronous userfaultfd write-protection came in Linux 6.7"))
    func aRegisteredMappingMapsOnlyThePagesThatAreRead() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fault-around-\(getpid())-\(UInt32.random(in: 0 ... .max))")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(repeating: 0x5a, count: 4 << 20).write(to: file)  // in the page cache now
        let fd = open(file.path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }

        /// Reads one byte every 512 KB of a fresh private mapping of the file (registered first
        /// if `registered`) and returns that mapping's resident bytes, or nil if registering failed.
        func residentAfterReading(registered: Bool) throws -> Int? {
            let length = 4 << 20, huge = 2 << 20
            // One page past a 2 MB boundary: the file was just written, so its page cache may be
            // in 2 MB folios, which a fault maps whole (as one huge page) where the addresses line up.
            let reserved = try #require(mmap(nil, length + 2 * huge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0).flatMap { $0 == MAP_FAILED ? nil : $0 })
            defer { munmap(reserved, length + 2 * huge) }
            let at = UnsafeMutableRawPointer(bitPattern: (UInt(bitPattern: reserved) + UInt(huge - 1)) & ~UInt(huge - 1) + UInt(page))
            let mapping = try #require(mmap(at, length, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0).flatMap { $0 == MAP_FAILED ? nil : $0 })
            if registered, !ProcessMemory.mapOnePagePerFault(UnsafeRawBufferPointer(start: mapping, count: length)) { return nil }
            var sum = 0
            for offset in stride(from: 0, to: length, by: 512 << 10) { sum += Int(mapping.load(fromByteOffset: offset, as: UInt8.self)) }
            #expect(sum == 8 * 0x5a)
            return try #require(ProcessMemory.resident(ofMappingAt: mapping))
        }

        let plain = try #require(try residentAfterReading(registered: false))
        let registered = try #require(try residentAfterReading(registered: true), "Linux \(Self.kernelRelease) refused the registration")
        #expect(registered == 8 * page, "8 pages read, \(registered / 1024) KB mapped; \(plain / 1024) KB without the watch")
        #expect(plain > registered, "without the watch \(plain / 1024) KB")
    }

    /// What a capture process does once its code's watch is open, done in a child of this
    /// process: after `refuseNewUserfaultfds` it asks for a userfaultfd as a compromised one
    /// would, by the call and by /dev/userfaultfd, and is refused both. Before, the same call
    /// succeeds, so the refusal is the filter's. The child exits with what it saw as bits.
    @Test(.enabled(if: Self.userfaultfdWorks(), "userfaultfd is refused here already"))
    func aProcessThatRefusedNewUserfaultfdsGetsNone() throws {
        let (callBefore, refused, callAfter, deviceOpened, deviceAfter) = (1, 2, 4, 8, 16)
        let open = Libc.open, system = Libc.syscall
        let pid = Libc.fork()
        if pid == 0 {
            // No allocation from here on: another thread of this process may have held malloc's lock.
            var seen = 0
            let before = system(Self.userfaultfdCall, Self.userModeOnly, 0, 0)
            if before >= 0 { seen |= callBefore; close(Int32(before)) }
            if (try? ProcessMemory.refuseNewUserfaultfds()) != nil { seen |= refused }
            if system(Self.userfaultfdCall, Self.userModeOnly, 0, 0) == -1, errno == EPERM { seen |= callAfter }
            let device = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC, 0)
            if device >= 0 {
                seen |= deviceOpened
                // USERFAULTFD_IOC_NEW, _IO(0xAA, 0x00): a new userfaultfd from the device.
                if system(Self.ioctlCall, Int(device), 0xAA00, Int(O_CLOEXEC)) == -1, errno == EPERM { seen |= deviceAfter }
            }
            _exit(Int32(seen))
        }
        try #require(pid > 0)
        var status: Int32 = 0
        try #require(waitpid(pid, &status, 0) == pid)
        let seen = Int((status >> 8) & 0xff)
        try #require(status & 0x7f == 0, "the child was ended by signal \(status & 0x7f)")
        #expect(seen & callBefore != 0, "the child got no userfaultfd even before refusing")
        #expect(seen & refused != 0, "the filter was not installed")
        #expect(seen & callAfter != 0, "userfaultfd(2) was not refused with EPERM")
        // Where the device can be opened (root, as in CI), its way is closed too.
        if seen & deviceOpened != 0 { #expect(seen & deviceAfter != 0, "/dev/userfaultfd's USERFAULTFD_IOC_NEW was not refused") }
    }

    #if arch(x86_64)
    static let (userfaultfdCall, ioctlCall) = (323, 16)
    #elseif arch(arm64)
    static let (userfaultfdCall, ioctlCall) = (282, 29)
    #endif
    /// UFFD_USER_MODE_ONLY with O_CLOEXEC: the kind an unprivileged process may open.
    static let userModeOnly = Int(O_CLOEXEC) | 1

    static func userfaultfdWorks() -> Bool {
        let fd = Libc.syscall(Self.userfaultfdCall, userModeOnly, 0, 0)
        if fd >= 0 { close(Int32(fd)) }
        return fd >= 0
    }

    /// libc calls Swift cannot make directly (variadic, or marked unavailable).
    enum Libc {
        static func symbol<T>(_ name: String, as type: T.Type) -> T { unsafeBitCast(dlsym(dlopen(nil, RTLD_NOW), name), to: type) }
        static let syscall = symbol("syscall", as: (@convention(c) (Int, Int, Int, Int) -> Int).self)
        static let fork = symbol("fork", as: (@convention(c) () -> Int32).self)
        static let open = symbol("open", as: (@convention(c) (UnsafePointer<CChar>, Int32, UInt32) -> Int32).self)
    }

    /// The running kernel's version, as [major, minor].
    static let kernelRelease: [Int] = {
        var names = utsname()
        uname(&names)
        let release = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return release.split(separator: ".").prefix(2).map { Int($0.prefix { $0.isNumber }) ?? 0 }
    }()
}
