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
}
