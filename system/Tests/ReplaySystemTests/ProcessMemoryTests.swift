import Foundation
import ReplaySystem
import Testing

@Suite struct ProcessMemoryTests {
    /// What a capture process does at its start, done in a child of this process: after
    /// `refuseUserfaultfds` it asks for a userfaultfd as a compromised one
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
            if (try? ProcessMemory.refuseUserfaultfds()) != nil { seen |= refused }
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
}
