import Foundation
import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayIPC
import Synchronization
import Testing

/// `awaitAnswer`: how a connection's task waits for a callback (a start, consent, an end), and
/// what happens to an answer that comes after replayd stopped waiting.
@Suite struct AwaitedAnswerTests {
    @Test func theFirstAnswerIsReturnedAndASecondIsIgnored() async throws {
        let late = Mutex<[Int]>([])
        let value = try await awaitAnswer({ (answer: @escaping @Sendable (Int) -> Void) in
            answer(1)
            answer(2)
        }, late: { value in late.withLock { $0.append(value) } })
        #expect(value == 1)
        #expect(late.withLock { $0 }.isEmpty, "an answer that was awaited went to late too")
    }

    @Test func anAnswerFromAnotherThreadLater() async throws {
        let value = try await awaitAnswer { (answer: @escaping @Sendable (String) -> Void) in
            Thread.detachNewThread { answer("started") }
        }
        #expect(value == "started")
    }

    /// replayd stopping cancels the connection's task: the wait ends at once, saying so, and the
    /// answer that comes afterwards goes to `late` (which ends what it started), once.
    @Test func cancellingEndsTheWaitAndTheAnswerThatComesLaterGoesToLate() async throws {
        let asked = Completion<@Sendable (Int) -> Void>()
        let late = Mutex<[Int]>([])
        let waiting = Task {
            try await awaitAnswer({ answer in asked.complete(answer) }, late: { value in late.withLock { $0.append(value) } })
        }
        let answer = await asked.finished()
        waiting.cancel()
        let outcome = await waiting.result
        #expect(throws: DaemonError.self) { try outcome.get() }
        if case .failure(let error as DaemonError) = outcome { #expect(error.message == "replayd is shutting down") }
        answer(7)
        answer(8)
        #expect(late.withLock { $0 } == [7])
    }

    @Test func aTaskCancelledBeforeItAsksAsksNothing() async throws {
        let askedAtAll = Mutex(false)
        let waiting = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await awaitAnswer { (_: @escaping @Sendable (Int) -> Void) in askedAtAll.withLock { $0 = true } }
        }
        await #expect(throws: DaemonError.self) { try await waiting.value }
        #expect(!askedAtAll.withLock { $0 })
    }
}
