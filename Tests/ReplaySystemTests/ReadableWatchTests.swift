#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import ReplaySystem
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

    @Test func everyMessageComesInOrderAndTheCancelHandlerRunsOnceAfterTheLastCall() throws {
        let (watched, writer) = try Self.pair()
        defer { close(writer) }
        let log = Mutex<[String]>([])
        let over = DispatchSemaphore(value: 0)
        _ = ReadableWatch(descriptor: watched, label: "test", whenCancelled: {
            log.withLock { $0.append("cancelled") }
            close(watched)
            over.signal()
        }) { watch in
            var byte: UInt8 = 0
            let count = read(watched, &byte, 1)
            guard count > 0 else { return watch.cancel() }
            log.withLock { $0.append("\(byte)") }
        }
        for byte in UInt8(1)...5 { Self.write(byte, to: writer) }
        shutdown(writer, Int32(SHUT_WR))
        #expect(over.wait(timeout: .now() + 10) == .success)
        // One message per wake-up: a level that stays readable wakes it again.
        #expect(log.withLock { $0 } == ["1", "2", "3", "4", "5", "cancelled"])
    }

    @Test func nothingIsDeliveredAfterCancel() throws {
        let (watched, writer) = try Self.pair()
        defer { close(writer) }
        let calls = Atomic(0)
        let cancelled = DispatchSemaphore(value: 0)
        let watch = ReadableWatch(descriptor: watched, label: "test", whenCancelled: {
            close(watched)
            cancelled.signal()
        }) { _ in calls.add(1, ordering: .relaxed) }
        watch.cancel()
        watch.cancel()  // a second cancel is no second end
        Self.write(1, to: writer)
        #expect(cancelled.wait(timeout: .now() + 10) == .success)
        #expect(cancelled.wait(timeout: .now() + 0.2) == .timedOut)
        #expect(calls.load(ordering: .relaxed) == 0)
    }

    /// Watches made and torn down on several threads at once, their peers hanging up while
    /// the event is taken and their numbers reused at once: each delivers, and ends once.
    @Test func watchesComingAndGoingOnManyThreadsAllEndCleanly() throws {
        let rounds = 400, threads = 6
        let delivered = Atomic(0), ended = Atomic(0)
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for round in 0..<rounds {
                guard let (watched, writer) = try? Self.pair() else { continue }
                let done = DispatchSemaphore(value: 0)
                _ = ReadableWatch(descriptor: watched, label: "churn", whenCancelled: {
                    close(watched)
                    ended.add(1, ordering: .relaxed)
                    done.signal()
                }) { watch in
                    var byte: UInt8 = 0
                    if read(watched, &byte, 1) == 1 { delivered.add(1, ordering: .relaxed) }
                    watch.cancel()
                }
                Self.write(UInt8(truncatingIfNeeded: round), to: writer)
                // Half close the writer at once, while the watch may still be taking the event.
                if round.isMultiple(of: 2) { close(writer) }
                _ = done.wait(timeout: .now() + 10)
                if !round.isMultiple(of: 2) { close(writer) }
            }
        }
        #expect(ended.load(ordering: .relaxed) == rounds * threads)
        #expect(delivered.load(ordering: .relaxed) == rounds * threads)
    }

    /// Whoever holds a watch is often what its handlers hold (an extension's connection and its
    /// listener): once cancelled, the watch lets go of its handlers, so both are freed.
    @Test func aCancelledWatchLetsGoOfItsHandlersAndSoOfWhoeverHoldsIt() throws {
        final class Owner: Sendable {
            let watch = Mutex<ReadableWatch?>(nil)
        }
        let (watched, writer) = try Self.pair()
        defer { close(writer) }
        weak var freed: Owner?
        let cancelled = DispatchSemaphore(value: 0)
        do {
            let owner = Owner()
            let watch = ReadableWatch(descriptor: watched, label: "cycle", whenCancelled: {
                _ = owner
                close(watched)
                cancelled.signal()
            }) { _ in _ = owner }
            owner.watch.withLock { $0 = watch }
            freed = owner
            watch.cancel()
        }
        #expect(cancelled.wait(timeout: .now() + 10) == .success)
        // The cancel handler returns a moment after it signals.
        for _ in 0..<500 where freed != nil { usleep(10_000) }
        #expect(freed == nil)
    }

    @Test func aDescriptorEpollCannotWatchStillGetsOneCallToFindOut() {
        let file = open("/proc/self/status", O_RDONLY | O_CLOEXEC)  // a regular file: epoll says EPERM
        let ended = DispatchSemaphore(value: 0)
        let calls = Atomic(0)
        _ = ReadableWatch(descriptor: file, label: "file", whenCancelled: {
            close(file)
            ended.signal()
        }) { watch in
            calls.add(1, ordering: .relaxed)
            watch.cancel()
        }
        #expect(ended.wait(timeout: .now() + 10) == .success)
        #expect(calls.load(ordering: .relaxed) == 1)
    }
}
