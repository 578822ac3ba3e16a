import Foundation
import ReplaySystem
import Synchronization
import Testing

/// The small helpers that stand in for Foundation's APIs outside FoundationEssentials (issue 48)
/// give what those APIs gave.
@Suite struct EssentialsHelperTests {
    @Test func printfFormatsNumbersAsStringFormatDoes() {
        for (format, value) in [("%.1f", 2.25), ("%8.1f MB", 12.34), ("%g", 2.0), ("%g", 0.5), ("%.0f", 1499.5)] {
            #expect(String(printf: format, value) == String(format: format, value))
        }
        #expect(String(printf: "0xff%06x", 0xabc) == "0xff000abc")
        #expect(String(printf: "%%%02X", 7) == "%07")
    }

    @Test func trimmingMatchesFoundationsSets() {
        #expect(" \t a b \t".trimmingSpaces() == "a b")
        #expect(" a\n".trimmingSpaces() == "a\n")
        #expect("\n a \r\n".trimmingWhitespace() == "a")
        #expect("   ".trimmingWhitespace() == "")
        #expect(Substring(" x ").trimmingSpaces() == "x")
    }

    @Test func percentDecodingMatchesFoundation() {
        for text in ["a%20b", "%E2%97%8F", "plain", "100%", "%zz", "%FF"] {
            #expect(text.removingPercentEncoding() == text.removingPercentEncoding)
        }
    }

    @Test func localTimeIsTheCLibrarysLocalTime() {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        let seconds = 1_790_000_000.75
        #expect(LocalTime.string(seconds, format: "%Y-%m-%d %H:%M:%S") == formatter.string(from: Date(timeIntervalSince1970: seconds)))
    }

    @Test func aDetachedThreadRunsAndAWaitEndsAtItsDeadline() {
        let lock = ConditionLock()
        let ran = Mutex(false)
        lock.lock()
        Threads.detach {
            lock.withLock { ran.withLock { $0 = true } }
            lock.signal()
        }
        while !ran.withLock({ $0 }) { _ = lock.wait(until: Date().addingTimeInterval(5)) }
        let start = Date()
        #expect(!lock.wait(until: start.addingTimeInterval(0.05)))
        lock.unlock()
        #expect(Date().timeIntervalSince(start) >= 0.04)
    }

    @Test func anOutputFileReadsBackWholeAndInParts() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("essentials-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try OutputFile(creating: path, mode: 0o600)
        try file.write(Array(0..<200).map(UInt8.init))
        file.close()
        #expect(FileFacts.size(atPath: path) == 200)
        let input = try FileDescriptor.open(path, flags: O_RDONLY)
        #expect(try input.size() == 200)
        #expect(try input.read(upTo: 150) == Array(0..<150).map(UInt8.init))
        #expect(try input.read(upTo: 150) == Array(150..<200).map(UInt8.init))
        #expect(input.bytes(count: 3, at: 10) == [10, 11, 12])
        #expect(input.bytes(count: 3, at: 199) == nil)
    }
}
