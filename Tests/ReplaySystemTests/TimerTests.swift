import Dispatch
import Foundation
import ReplaySystem
import Synchronization
import Testing

/// The timers' pausing and deadlines: what runs, and how often. The waits are generous and
/// only bound how long a failing test takes; nothing here is timed.
@Suite struct TimerTests {
    @Test func aDeadlineSetAgainBeforeItCameRunsTheActionOnceAtTheLastOne() {
        let runs = Mutex(0)
        let ran = DispatchSemaphore(value: 0)
        let timer = DeadlineTimer {
            runs.withLock { $0 += 1 }
            ran.signal()
        }
        defer { timer.cancel() }
        timer.fire(after: 0.2)
        timer.fire(after: 0.3)
        #expect(ran.wait(timeout: .now() + 10) == .success)
        // Past both deadlines: one run, for the second.
        #expect(ran.wait(timeout: .now() + 0.6) == .timedOut)
        #expect(runs.withLock { $0 } == 1)
        // Set again after it ran: it runs again.
        timer.fire(after: 0.05)
        #expect(ran.wait(timeout: .now() + 10) == .success)
        #expect(runs.withLock { $0 } == 2)
    }

    @Test func aDeadlineTimerWithNoDeadlineNeverRuns() {
        let ran = DispatchSemaphore(value: 0)
        let timer = DeadlineTimer { ran.signal() }
        defer { timer.cancel() }
        #expect(ran.wait(timeout: .now() + 0.5) == .timedOut)
    }

    @Test func aPausedTimerTicksOnlyBetweenResumeAndPause() {
        let ticks = Mutex(0)
        let ticked = DispatchSemaphore(value: 0)
        let timer = RepeatingTimer(interval: 0.05, paused: true) {
            ticks.withLock { $0 += 1 }
            ticked.signal()
        }
        defer { timer.cancel() }
        #expect(ticked.wait(timeout: .now() + 0.5) == .timedOut, "a timer made paused ticked")

        timer.resume(immediately: true)
        for _ in 0..<3 { #expect(ticked.wait(timeout: .now() + 10) == .success) }
        timer.pause()
        // A tick already on its way may still land; after that, none.
        Thread.sleep(forTimeInterval: 0.2)
        let paused = ticks.withLock { $0 }
        Thread.sleep(forTimeInterval: 0.5)
        #expect(ticks.withLock { $0 } == paused, "a paused timer went on ticking")

        // Resuming twice keeps one pace: still ticking after both.
        while ticked.wait(timeout: .now()) == .success {}
        timer.resume()
        timer.resume()
        #expect(ticked.wait(timeout: .now() + 10) == .success)
    }

    /// `DispatchTimers.after`: runs once, on the queue it was given; cancelled first, never.
    @Test func aOneShotRunsOnceOnItsQueueAndACancelledOneNever() {
        let timers = DispatchTimers()
        let queue = DispatchQueue(label: "timer-test")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let ran = DispatchSemaphore(value: 0)
        let onQueue = Mutex<[Bool]>([])
        timers.after(0.05, on: queue) {
            onQueue.withLock { $0.append(DispatchQueue.getSpecific(key: key) == true) }
            ran.signal()
        }
        let cancelled = timers.after(0.05) { ran.signal() }
        cancelled.cancel()
        #expect(ran.wait(timeout: .now() + 10) == .success)
        #expect(ran.wait(timeout: .now() + 0.5) == .timedOut, "the cancelled one ran, or the other twice")
        #expect(onQueue.withLock { $0 } == [true])
    }
}
