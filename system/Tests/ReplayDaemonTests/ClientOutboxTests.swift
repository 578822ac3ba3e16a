import Foundation
import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayIPC
@testable import ReplaySession
import Testing

/// The daemon's side of a connection never waits for a client.
@Suite struct ClientOutboxTests {
    @Test func aClientThatNeverReadsIsCutOffWhenItsQueueIsFull() throws {
        let (outbox, client) = try socketPair(outboxLimit: 64 << 10)
        let event = DaemonEvent.error(code: .busy, message: String(repeating: "x", count: 1000))
        var sent = 0
        // The socket's own buffer fills first, then the queue: every send returns at once.
        while sent < 100_000, (try? outbox.send(event)) != nil { sent += 1 }
        #expect(sent < 100_000, "the queue is bounded")
        #expect(outbox.isClosed)
        #expect(throws: (any Error).self) { try outbox.send(event) }
        _ = client
    }

    /// A 4K picture (12.4 MB) is more than the 8 MiB of events a client may leave unread: sent
    /// as bulk, after asking for room, it never cuts the client off, and an event queued behind
    /// it still has the whole limit (issue 46: the app lost its connection at its first picture).
    @Test func bulkDataLargerThanTheLimitNeitherCutsOffNorCountsAgainstEvents() throws {
        let (outbox, client) = try socketPair(outboxLimit: 64 << 10)
        let picture = [UInt8](repeating: 7, count: 1 << 20)
        #expect(outbox.hasRoom(below: picture.count * 2))
        try picture.withUnsafeBytes { try outbox.sendBulk(DaemonEvent.capturedFrame(frame: CapturedFrameInfo(time: 0, width: 1, height: 1)), body: $0) }
        #expect(outbox.pendingBytes > 64 << 10, "the client has not read it yet")
        #expect(!outbox.hasRoom(below: picture.count), "a second picture would wait")
        try outbox.send(DaemonEvent.captureStopped(error: nil))
        #expect(!outbox.isClosed)
        let first = try #require(try client.receive(DaemonEvent.self))
        #expect(first.body == picture)
        let second = try #require(try client.receive(DaemonEvent.self))
        #expect(second.message == .captureStopped(error: nil))
    }

    @Test func aClientThatReadsGetsEveryEventInOrder() async throws {
        let (outbox, client) = try socketPair(outboxLimit: 64 << 10)
        let reader = Completion<[Int]>()
        Thread.detachNewThread {
            var seen: [Int] = []
            while seen.count < 2000, let (event, _) = try? client.receive(DaemonEvent.self) {
                if case .recordingDeleted(let id) = event { seen.append(Int(id) ?? -1) }
            }
            reader.complete(seen)
        }
        for index in 0..<2000 {
            // A reader keeps the queue short: wait for room as bulk senders do.
            #expect(try await outbox.waitForRoom(below: 32 << 10))
            try outbox.send(DaemonEvent.recordingDeleted(id: "\(index)"))
        }
        #expect(try await reader.value("the reader's 2000 events") == Array(0..<2000))
    }
}
