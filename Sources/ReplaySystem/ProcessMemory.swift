import CShims
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

    /// From now on this process, and what it starts, may open no userfaultfd (the call, or
    /// /dev/userfaultfd's): one more seccomp filter, on every thread. For a process that parses
    /// what comes from outside (a capture process's pictures and streams): a userfaultfd
    /// stalls the process's own accesses at will, the classic lever for widening a race in the
    /// kernel, and nothing here needs one.
    public static func refuseUserfaultfds() throws(SystemError) {
        let result = CShims_refuse_new_userfaultfds()
        if result < 0 { throw SystemError(call: "seccomp (no new userfaultfd)", errno: -result) }
    }

    /// No transparent huge pages for this process: an encoder madvises its picture buffers for
    /// huge pages, which then take 2 MB of memory at a time whether or not it is all used.
    public static func withoutHugePages() { CShims_disable_transparent_huge_pages() }
}
