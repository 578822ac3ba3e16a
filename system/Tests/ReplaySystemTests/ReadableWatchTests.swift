#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import ReplaySystem
import ReplayTestEvents
import Synchronization
import Testing

@Suite struct ReadableWatchTests {
    /// A connected SOCK_SEQPACKET pair: (watched end, writer's end).
    private static func pair() throws -> (Int32, Int32) {
        var ends: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        return (ends[0], ends[1])
    }

    private static func write(_ byte: UInt8, to fd: Int32) {
        var byte = byte
        _ = Glibc.write(fd, &byte, 1)
    }

    @Test func everyMessageComesInOrderAndTheCancelHandlerRunsOnceAfterTheLastCall() async throws {
        let (watched, writer) = try Self.pair()
        defer { close(writer) }
        let log = Mutex<[String]>([])
        let over = Events<Void>()
        _ = ReadableWatch(descriptor: watched, label: "test", whenCancelled: {
            log.withLock { $0.append("cancelled") }
            close(watched)
            over.record()
        }) { watch in
            var byte: UInt8 = 0
            let count = read(watched, &byte, 1)
            guard count > 0 else { return watch.cancel() }
            log.withLock { $0.append("\(byte)") }
        }
        for byte in UInt8(1)...5 { Self.write(byte, to: writer) }
        shutdown(writer, Int32(SHUT_WR))
        #expect(await over.happened(within: 10), "the watch was never cancelled")
        // One message per wake-up: a level that stays readable wakes it again.
        #expect(log.withLock { $0 } == ["1", "2", "3", "4", "5", "cancelled"])
    }

    @Test func nothingIsDeliveredAfterCancel() async throws {
        let (watched, writer) = try Self.pair()
        defer { close(writer) }
        let calls = Atomic(0)
        let cancelled = Events<Void>()
        let watch = ReadableWatch(descriptor: watched, label: "test", whenCancelled: {
            close(watched)
            cancelled.record()
        }) { _ in calls.add(1, ordering: .relaxed) }
        watch.cancel()
        watch.cancel()  // a second cancel is no second end
        Self.write(1, to: writer)
        #expect(await cancelled.happened(within: 10), "the cancel handler never ran")
        #expect(await cancelled.happened(within: 0.2) == false, "the cancel handler ran twice")
        #expect(calls.load(ordering: .relaxed) == 0)
    }

    /// Watches made and torn down on several threads at once, their peers hanging up while
    /// the event is taken and their numbers reused at once: each delivers, and ends once.
    @Test func watchesComingAndGoingOnManyThreadsAllEndCleanly() async throws {
        let rounds = 400, lanes = 6
        let tally = Tally()
        await withDiscardingTaskGroup { group in
            for _ in 0..<lanes {
                group.addTask { await Self.churn(rounds: rounds, tally: tally) }
            }
        }
        #expect(tally.ended.load(ordering: .relaxed) == rounds * lanes)
        #expect(tally.delivered.load(ordering: .relaxed) == rounds * lanes)
    }

    private final class Tally: Sendable {
        let delivered = Atomic(0), ended = Atomic(0)
    }

    /// One lane of the churn: `rounds` watches, one after the other, each awaited to its end.
    private static func churn(rounds: Int, tally: Tally) async {
        for round in 0..<rounds {
            guard let (watched, writer) = try? Self.pair() else { continue }
            let done = Events<Void>()
            _ = ReadableWatch(descriptor: watched, label: "churn", whenCancelled: {
                close(watched)
                tally.ended.add(1, ordering: .relaxed)
                done.record()
            }) { watch in
                var byte: UInt8 = 0
                if read(watched, &byte, 1) == 1 { tally.delivered.add(1, ordering: .relaxed) }
                watch.cancel()
            }
            Self.write(UInt8(truncatingIfNeeded: round), to: writer)
            // Half close the writer at once, while the watch may still be taking the event.
            if round.isMultiple(of: 2) { close(writer) }
            // A watch that never ends is counted by the test's `ended`.
            _ = await done.next(within: 10)
            if !round.isMultiple(of: 2) { close(writer) }
        }
    }

    /// Whoever holds a watch is often what its handlers hold (an extension's connection and its
    /// listener): once cancelled, the watch lets go of its handlers, so both are freed.
    @Test func aCancelledWatchLetsGoOfItsHandlersAndSoOfWhoeverHoldsIt() async throws {
        final class Owner: Sendable {
            let watch = Mutex<ReadableWatch?>(nil)
        }
        let (watched, writer) = try Self.pair()
        defer { close(writer) }
        weak var freed: Owner?
        let cancelled = Events<Void>()
        do {
            let owner = Owner()
            let watch = ReadableWatch(descriptor: watched, label: "cycle", whenCancelled: {
                _ = owner
                close(watched)
                cancelled.record()
            }) { _ in _ = owner }
            owner.watch.withLock { $0 = watch }
            freed = owner
            watch.cancel()
        }
        #expect(await cancelled.happened(within: 10), "the cancel handler never ran")
        // The cancel handler returns a moment after it reports; what it lets go is not an event.
        for _ in 0..<500 where freed != nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(freed == nil)
    }

    @Test func aDescriptorEpollCannotWatchStillGetsOneCallToFindOut() async {
        let file = open("/proc/self/status", O_RDONLY | O_CLOEXEC)  // a regular file: epoll says EPERM
        let ended = Events<Void>()
        let calls = Atomic(0)
        _ = ReadableWatch(descriptor: file, label: "file", whenCancelled: {
            close(file)
            ended.record()
        }) { watch in
            calls.add(1, ordering: .relaxed)
            watch.cancel()
        }
        #expect(await ended.happened(within: 10), "the watch was never cancelled")
        #expect(calls.load(ordering: .relaxed) == 1)
    }
}
