import CShims
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// The process's memory as the system counts it, and glibc's malloc told to give back what
/// is freed. The encoders (SVT-AV1, x265) allocate hundreds of MB from many threads; glibc
/// frees it into its arenas and, by default, keeps it there.
public enum ProcessMemory {
    /// Resident bytes from /proc/self/status: all (VmRSS) and anonymous (RssAnon) memory.
    public static func resident() -> (total: Int, anonymous: Int)? {
        guard let status = ProcFS.text("/proc/self/status") else { return nil }
        var kilobytes: [Substring: Int] = [:]
        for line in status.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == ":" || $0 == " " || $0 == "\t" })
            if fields.count >= 2, let value = Int(fields[1]) { kilobytes[fields[0]] = value }
        }
        guard let total = kilobytes["VmRSS"], let anonymous = kilobytes["RssAnon"] else { return nil }
        return (total * 1024, anonymous * 1024)
    }

    /// The machine's physical memory in bytes.
    public static var physical: Int { sysconf(Int32(_SC_PHYS_PAGES)) * sysconf(Int32(_SC_PAGESIZE)) }

    /// Bytes handed out by malloc and not yet freed: what a leak grows, unlike resident memory.
    public static var mallocInUse: Int { Int(CShims_malloc_in_use()) }

    /// Returns the free pages of every malloc arena to the system: after a large user of
    /// memory (an encoder) has gone.
    public static func returnFreedMemory() { CShims_malloc_trim() }

    /// Once per process: large blocks are unmapped when freed rather than kept in the arenas.
    /// glibc otherwise raises its mmap threshold to the largest block freed (an encoder's
    /// picture buffers), after which such blocks come from arenas and stay resident.
    public static func returnLargeBlocksWhenFreed() { _ = fixedThreshold }

    private static let fixedThreshold: Void = CShims_malloc_fix_mmap_threshold()

    /// Every thread allocates from one malloc arena: for a process whose threads rarely
    /// allocate at the same time, where an arena per thread would only keep more free pages.
    /// Best called before threads start: a thread keeps the arena it already has.
    public static func useOneArena() { CShims_malloc_one_arena() }

    /// Gives back what finished work left behind: malloc's free pages, and the mappings of the
    /// code it ran (`unmapOwnCode`).
    public static func settle() {
        returnFreedMemory()
        unmapOwnCode()
    }

    /// For a process that has started its work and now repeats a little of its code for long (a
    /// capture process): `settle`s `seconds` from now, when the code that ran only to start is done.
    public static func settle(after seconds: Double) {
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { settle() }
    }

    /// Unmaps the program's own code, to be mapped back a page at a time as it runs again: for
    /// a daemon that has started, or finished its work, and now waits. A page fault on a file's
    /// page maps the 64 KB around it too ("fault-around"), so work that ran code all over a
    /// large static binary leaves megabytes of it mapped that a waiting process does not run.
    /// The pages stay in the page cache, where the kernel may reclaim them sooner than mapped
    /// code; what runs later maps back in at a minor fault a page. Only the executable's
    /// read-and-execute segment: it holds no relocated data to lose. Returns the bytes that
    /// segment spans, or nil when it was not found.
    @discardableResult
    public static func unmapOwnCode() -> Int? {
        guard let maps = ProcFS.text("/proc/self/maps") else { return nil }
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let executable = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var spanned = 0
        for line in maps.split(separator: "\n") {
            // "start-end perms offset device inode path"
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6, fields[1] == "r-xp", fields[5].drop(while: { $0 == " " }) == executable else { continue }
            let bounds = fields[0].split(separator: "-").compactMap { UInt(String($0), radix: 16) }
            guard bounds.count == 2, bounds[1] > bounds[0], let start = UnsafeMutableRawPointer(bitPattern: bounds[0]) else { continue }
            let size = Int(bounds[1] - bounds[0])
            guard madvise(start, size, MADV_DONTNEED) == 0 else { continue }
            spanned += size
        }
        return spanned > 0 ? spanned : nil
    }
}
