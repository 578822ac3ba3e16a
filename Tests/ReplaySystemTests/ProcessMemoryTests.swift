import ReplaySystem
import Testing

@Suite struct ProcessMemoryTests {
    /// The executable's code is unmapped (its resident file pages drop) and maps back in as it
    /// runs: the process goes on calling into it.
    @Test func unmappingOwnCodeGivesBackItsPagesAndTheProcessRunsOn() throws {
        // Resident less anonymous: the mapped pages of files, the executable's among them.
        let before = try #require(ProcessMemory.resident().map { $0.total - $0.anonymous })
        let spanned = try #require(ProcessMemory.unmapOwnCode())
        let after = try #require(ProcessMemory.resident().map { $0.total - $0.anonymous })
        #expect(spanned > 0)
        #expect(after < before, "resident file pages \(before) bytes before, \(after) after")
        // Code that was unmapped runs again.
        var limit = RateLimit(perSecond: 1)
        #expect(limit.admit(now: 0) == 0)
        #expect(ProcessMemory.resident() != nil)
    }
}
