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
            return try #require(Self.resident(of: mapping))
        }

        let plain = try #require(try residentAfterReading(registered: false))
        let registered = try #require(try residentAfterReading(registered: true), "Linux \(Self.kernelRelease) refused the registration")
        #expect(registered == 8 * page, "8 pages read, \(registered / 1024) KB mapped; \(plain / 1024) KB without the watch")
        #expect(plain > registered, "without the watch \(plain / 1024) KB")
    }

    /// The running kernel's version, as [major, minor].
    static let kernelRelease: [Int] = {
        var names = utsname()
        uname(&names)
        let release = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return release.split(separator: ".").prefix(2).map { Int($0.prefix { $0.isNumber }) ?? 0 }
    }()

    /// The `Rss` of the mapping that starts at `address`, from /proc/self/smaps.
    static func resident(of address: UnsafeMutableRawPointer) -> Int? {
        guard let smaps = ProcFS.text("/proc/self/smaps") else { return nil }
        var inside = false
        for line in smaps.split(separator: "\n") {
            if let range = line.split(separator: " ").first, range.contains("-") {
                inside = range.split(separator: "-").first.flatMap { UInt($0, radix: 16) } == UInt(bitPattern: address)
            } else if inside, line.hasPrefix("Rss:") {
                return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1024 }
            }
        }
        return nil
    }
}
