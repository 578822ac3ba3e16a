@testable import ReplayDaemon
import ReplayCaptureModel
import ReplayIPC
import Testing

@Suite struct ExportSpanTests {
    @Test func aSpanIsWholeWhenAbsentAndRunsToTheEndOrFromTheStartWhenHalfGiven() throws {
        #expect(try ClientConnection.exportSpan(from: nil, to: nil) == nil)
        #expect(try ClientConnection.exportSpan(from: 3, to: 7) == 3..<7)
        #expect(try ClientConnection.exportSpan(from: nil, to: 7) == 0..<7)
        #expect(try ClientConnection.exportSpan(from: 3, to: nil)?.lowerBound == 3)
    }

    @Test(arguments: [(-1.0, 2.0), (5.0, 5.0), (6.0, 2.0), (Double.nan, 3.0), (1.0, Double.infinity)])
    func aSpanThatIsNotOneIsAMalformedRequest(from: Double, to: Double) {
        let error = #expect(throws: DaemonError.self) { try ClientConnection.exportSpan(from: from, to: to) }
        #expect(error?.code == .malformedRequest && error?.message.contains("0 ≤ from < to") == true)
    }

    @Test func aRemuxJobsCommandLineReadsBack() {
        let jobs = [RemuxJob(container: .matroska), RemuxJob(container: .mp4, span: 2.5..<7.25), RemuxJob(container: .matroska, span: 0..<1e300)]
        for job in jobs { #expect(RemuxJob(arguments: job.arguments) == job) }
        #expect(RemuxJob(arguments: ["--remux", "--container", "avi"]) == nil)
        #expect(RemuxJob(arguments: ["--remux", "--container", "mp4", "--from", "7", "--to", "3"]) == nil)
    }
}
