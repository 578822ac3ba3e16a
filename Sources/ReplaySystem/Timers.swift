public import Dispatch

/// The seam every timer of the control daemon goes through: timeouts, graces, retries,
/// watchdogs, probes and settling are all scheduled on a `Timers`, and "how long since" is read
/// from its `now()`. replayd uses dispatch's timers (`DispatchTimers`); a unit test hands in a
/// clock it moves by hand, so a 120 s consent timeout or a 5 s grace is tested in no time.
public protocol Timers: Sendable {
    /// Monotonic nanoseconds on this clock.
    func now() -> Int64
    /// Runs `action` once on `queue`, `seconds` from now, unless cancelled first.
    @discardableResult
    func after(_ seconds: Double, on queue: DispatchQueue, _ action: @escaping @Sendable () -> Void) -> any TimerControl
    /// Runs `action` on `queue` every `interval` seconds (`paused`: not until resumed).
    func repeating(every interval: Double, on queue: DispatchQueue, paused: Bool,
                   _ action: @escaping @Sendable () -> Void) -> any RepeatingTimerControl
    /// Runs `action` on `queue` at a deadline that can be set again and again.
    func deadline(on queue: DispatchQueue, _ action: @escaping @Sendable () -> Void) -> any DeadlineTimerControl
}

/// Where a timer's action runs when its caller names no queue: a serial queue of its own, not
/// dispatch's global one. On Linux, the first work dispatch's global queues run starts
/// libdispatch's pool monitor, a timer that wakes the process once a second for the rest of
/// its life; serial queues run on threads it does not watch.
@usableFromInline func timerQueue() -> DispatchQueue { DispatchQueue(label: "timer") }

extension Timers {
    @discardableResult
    public func after(_ seconds: Double, _ action: @escaping @Sendable () -> Void) -> any TimerControl {
        after(seconds, on: timerQueue(), action)
    }

    public func repeating(every interval: Double, on queue: DispatchQueue = timerQueue(),
                          _ action: @escaping @Sendable () -> Void) -> any RepeatingTimerControl {
        repeating(every: interval, on: queue, paused: false, action)
    }
}

/// A timer that can be stopped; an action already running finishes.
public protocol TimerControl: AnyObject, Sendable {
    func cancel()
}

/// A timer that ticks until cancelled, and can be paused (no thread wakes meanwhile).
public protocol RepeatingTimerControl: TimerControl {
    /// Ticks again, the first time at once when `immediately`, else after one interval.
    func resume(immediately: Bool)
    func pause()
}

extension RepeatingTimerControl {
    /// Ticks again after one interval; a timer already ticking keeps its pace.
    public func resume() { resume(immediately: false) }
}

/// A timer with one deadline, set again by each call.
public protocol DeadlineTimerControl: TimerControl {
    /// Runs the action `seconds` from now, once, instead of at any deadline set before.
    func fire(after seconds: Double)
}

/// Dispatch's timers on CLOCK_MONOTONIC: what replayd runs on.
public struct DispatchTimers: Timers {
    public init() {}

    public func now() -> Int64 { MonotonicClock.nanoseconds() }

    @discardableResult
    public func after(_ seconds: Double, on queue: DispatchQueue, _ action: @escaping @Sendable () -> Void) -> any TimerControl {
        let work = DispatchWorkItem(block: action)
        queue.asyncAfter(deadline: .now() + max(0, seconds), execute: work)
        return OneShot(work: work)
    }

    public func repeating(every interval: Double, on queue: DispatchQueue, paused: Bool,
                          _ action: @escaping @Sendable () -> Void) -> any RepeatingTimerControl {
        RepeatingTimer(interval: interval, queue: queue, paused: paused, action: action)
    }

    public func deadline(on queue: DispatchQueue, _ action: @escaping @Sendable () -> Void) -> any DeadlineTimerControl {
        DeadlineTimer(queue: queue, action: action)
    }

    private final class OneShot: TimerControl, @unchecked Sendable {
        // @unchecked: a work item may be cancelled from any thread.
        let work: DispatchWorkItem
        init(work: DispatchWorkItem) { self.work = work }
        func cancel() { work.cancel() }
    }
}

extension RepeatingTimer: RepeatingTimerControl {}
extension DeadlineTimer: DeadlineTimerControl {}
