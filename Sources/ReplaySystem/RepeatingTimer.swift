public import Dispatch
import Synchronization

/// Runs an action every `interval` seconds on `queue` (a serial one of its own by default) until
/// cancelled: the daemon's periodic work (progress reports, watchdogs, probes) waits on a
/// timer, not in a sleeping thread. Timers that share a serial queue never run at once, so
/// they need one of dispatch's worker threads at a time between them. A paused timer wakes
/// no thread at all: a probe with nobody to serve is paused, and dispatch's idle workers end.
public final class RepeatingTimer: @unchecked Sendable {
    // @unchecked: a dispatch source may be scheduled and cancelled from any thread.
    private let source: any DispatchSourceTimer
    private let interval: Double
    private let leeway: DispatchTimeInterval
    /// Whether it ticks; `pause` and `resume` change it under this lock, so the last call wins.
    private let ticking: Mutex<Bool>

    public init(interval: Double, leeway: Double = 0.01, queue: DispatchQueue = timerQueue(), paused: Bool = false,
                action: @escaping @Sendable () -> Void) {
        self.interval = interval
        self.leeway = .nanoseconds(Int(leeway * 1e9))
        ticking = Mutex(!paused)
        source = DispatchSource.makeTimerSource(queue: queue)
        if paused {
            source.schedule(deadline: .distantFuture, repeating: .never)
        } else {
            source.schedule(deadline: .now() + interval, repeating: interval, leeway: self.leeway)
        }
        source.setEventHandler(handler: action)
        source.resume()
    }

    /// Ticks again, the first time at once when `immediately`, else after one interval; a
    /// timer already ticking keeps its pace.
    public func resume(immediately: Bool = false) {
        ticking.withLock { ticking in
            guard !ticking else { return }
            ticking = true
            source.schedule(deadline: .now() + (immediately ? 0 : interval), repeating: interval, leeway: leeway)
        }
    }

    /// No more ticks until `resume`; a tick already running finishes.
    public func pause() {
        ticking.withLock { ticking in
            guard ticking else { return }
            ticking = false
            source.schedule(deadline: .distantFuture, repeating: .never)
        }
    }

    /// Stops it; an action already running finishes.
    public func cancel() { source.cancel() }

    deinit { source.cancel() }
}

/// Runs an action once, at a deadline that can be set again and again (`fire(after:)`), on
/// `queue`: "once things have been quiet this long" without a timer ticking meanwhile. With
/// no deadline set it wakes no thread.
public final class DeadlineTimer: @unchecked Sendable {
    // @unchecked: a dispatch source may be scheduled and cancelled from any thread.
    private let source: any DispatchSourceTimer

    public init(queue: DispatchQueue = timerQueue(), action: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .distantFuture, repeating: .never)
        source.setEventHandler(handler: action)
        source.resume()
    }

    /// Runs the action `seconds` from now, once, instead of at any deadline set before.
    public func fire(after seconds: Double) {
        source.schedule(deadline: .now() + seconds, repeating: .never, leeway: .milliseconds(100))
    }

    /// Stops it; an action already running finishes.
    public func cancel() { source.cancel() }

    deinit { source.cancel() }
}
