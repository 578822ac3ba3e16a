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

    @Test func aClientThatReadsGetsEveryEventInOrder() throws {
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
            #expect(outbox.waitForRoom(below: 32 << 10))
            try outbox.send(DaemonEvent.recordingDeleted(id: "\(index)"))
        }
        #expect(reader.wait() == Array(0..<2000))
    }
}
