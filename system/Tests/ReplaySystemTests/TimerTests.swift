import Dispatch
import ReplaySystem
import ReplayTestEvents
import Synchronization
import Testing

/// The timers' pausing and deadlines: what runs, and how often. The tests await each run; the
/// deadlines only bound how long a failing test takes, and the quiet spells that check nothing
/// more ran are the only waits that pass without an event.
@Suite struct TimerTests {
    @Test func aDeadlineSetAgainBeforeItCameRunsTheActionOnceAtTheLastOne() async {
        let runs = Mutex(0)
        let ran = Events<Void>()
        let timer = DeadlineTimer {
            runs.withLock { $0 += 1 }
            ran.record()
        }
        defer { timer.cancel() }
        timer.fire(after: 0.2)
        timer.fire(after: 0.3)
        #expect(await ran.happened(within: 10))
        // Past both deadlines: one run, for the second.
        #expect(await ran.happened(within: 0.6) == false)
        #expect(runs.withLock { $0 } == 1)
        // Set again after it ran: it runs again.
        timer.fire(after: 0.05)
        #expect(await ran.happened(within: 10))
        #expect(runs.withLock { $0 } == 2)
    }

    @Test func aDeadlineTimerWithNoDeadlineNeverRuns() async {
        let ran = Events<Void>()
        let timer = DeadlineTimer { ran.record() }
        defer { timer.cancel() }
        #expect(await ran.happened(within: 0.5) == false)
    }

    @Test func aPausedTimerTicksOnlyBetweenResumeAndPause() async {
        let ticks = Mutex(0)
        let ticked = Events<Void>()
        let timer = RepeatingTimer(interval: 0.05, paused: true) {
            ticks.withLock { $0 += 1 }
            ticked.record()
        }
        defer { timer.cancel() }
        #expect(await ticked.happened(within: 0.5) == false, "a timer made paused ticked")

        timer.resume(immediately: true)
        for _ in 0..<3 { #expect(await ticked.happened(within: 10)) }
        timer.pause()
        // A tick already on its way may still land; after that, none.
        ticked.discardPending()
        _ = await ticked.next(within: 0.2)
        let paused = ticks.withLock { $0 }
        #expect(await ticked.happened(within: 0.5) == false, "a paused timer went on ticking")
        #expect(ticks.withLock { $0 } == paused, "a paused timer went on ticking")

        // Resuming twice keeps one pace: still ticking after both.
        ticked.discardPending()
        timer.resume()
        timer.resume()
        #expect(await ticked.happened(within: 10))
    }

    /// `DispatchTimers.after`: runs once, on the queue it was given; cancelled first, never.
    @Test func aOneShotRunsOnceOnItsQueueAndACancelledOneNever() async {
        let timers = DispatchTimers()
        let queue = DispatchQueue(label: "timer-test")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let ran = Events<Void>()
        let onQueue = Mutex<[Bool]>([])
        timers.after(0.05, on: queue) {
            onQueue.withLock { $0.append(DispatchQueue.getSpecific(key: key) == true) }
            ran.record()
        }
        let cancelled = timers.after(0.05) { ran.record() }
        cancelled.cancel()
        #expect(await ran.happened(within: 10))
        #expect(await ran.happened(within: 0.5) == false, "the cancelled one ran, or the other twice")
        #expect(onQueue.withLock { $0 } == [true])
    }
}
