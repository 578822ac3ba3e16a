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
}
