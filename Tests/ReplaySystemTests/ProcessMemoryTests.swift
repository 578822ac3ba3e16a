import ReplaySystem
import Testing

@Suite struct ProcessMemoryTests {
    /// The executable's code is unmapped (its resident file pages drop) and maps back in as it
    /// runs: the process goes on calling into it.
    @Test func unmappingOwnCodeGivesBackItsPagesAndTheProcessRunsOn() throws {
        let before = try #require(ProcFSProbe.residentFileKilobytes())
        let spanned = try #require(ProcessMemory.unmapOwnCode())
        let after = try #require(ProcFSProbe.residentFileKilobytes())
        #expect(spanned > 0)
        #expect(after < before, "resident file pages \(before) kB before, \(after) kB after")
        // Code that was unmapped runs again.
        var limit = RateLimit(perSecond: 1)
        #expect(limit.admit(now: 0) == 0)
        #expect(ProcessMemory.resident() != nil)
    }
}

/// RssFile of /proc/self/status: the mapped pages of files, the executable's among them.
private enum ProcFSProbe {
    static func residentFileKilobytes() -> Int? {
        guard let status = ProcFS.text("/proc/self/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("RssFile:") {
            return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }
}
