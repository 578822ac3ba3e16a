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

    /// Resident bytes of the one mapping that starts at `address` (its `Rss` in
    /// /proc/self/smaps): what a single mapping holds, whatever else the process does meanwhile.
    public static func resident(ofMappingAt address: UnsafeRawPointer) -> Int? {
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
    /// code it ran (`dropCodePages`).
    public static func settle() {
        returnFreedMemory()
        dropCodePages()
    }

    /// For a process that has started its work and now repeats a little of its code for long (a
    /// capture process): `settle`s `seconds` from now, when the code that ran only to start is done.
    public static func settle(after seconds: Double) {
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { settle() }
    }

    /// Drops the resident pages of the code and constants of the program and of every library
    /// it loaded, to be mapped back a page at a time as they are read again: for a process that
    /// has started, or finished its work, and now waits or repeats a little of its code. A
    /// page fault on a file's page maps the 64 KB around it too ("fault-around"), so loading
    /// and starting leave megabytes mapped that the process does not run again: FFmpeg's
    /// libraries alone bring 21 MB of such pages into a capture process. The pages stay in the
    /// page cache, where the kernel may reclaim them sooner than mapped ones; what runs later
    /// maps back in at a minor fault, and from the first call on, on Linux 6.7 and later, a
    /// page at a time: the segments are registered with a userfaultfd write-protection watch
    /// that never fires (nothing writes there) and under which the kernel does no fault-around.
    /// Only segments nothing may write, less their relocated (RELRO) part, whose pages hold the
    /// file's own bytes. Returns the bytes those span.
    @discardableResult
    public static func dropCodePages() -> Int { Int(CShims_drop_read_only_segments()) }

    /// From now on a fault in `pages` (page-aligned, of a mapping nothing writes) maps that page
    /// alone, not the 64 KB around it; what `dropCodePages` does for every loaded object's
    /// read-only segments. False where the kernel cannot (before Linux 6.7, or userfaultfd
    /// refused): faults there map as before.
    @discardableResult
    public static func mapOnePagePerFault(_ pages: UnsafeRawBufferPointer) -> Bool {
        guard let start = pages.baseAddress else { return false }
        return CShims_map_one_page_per_fault(UnsafeMutableRawPointer(mutating: start), pages.count) == 0
    }

    /// From now on this process, and what it starts, may open no userfaultfd of its own (the
    /// call, or /dev/userfaultfd's): one more seccomp filter, on every thread. For a confined
    /// process that opened the one it needs, `dropCodePages`'s watch, at its start: a
    /// userfaultfd stalls the process's own accesses at will, and its code in the kernel is
    /// more for an attacker to reach. The watch it holds goes on taking what loads later.
    public static func refuseNewUserfaultfds() throws(SystemError) {
        let result = CShims_refuse_new_userfaultfds()
        if result < 0 { throw SystemError(call: "seccomp (no new userfaultfd)", errno: -result) }
    }

    /// No transparent huge pages for this process: an encoder madvises its picture buffers for
    /// huge pages, which then take 2 MB of memory at a time whether or not it is all used.
    public static func withoutHugePages() { CShims_disable_transparent_huge_pages() }
}
