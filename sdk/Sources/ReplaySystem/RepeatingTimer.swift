public import Dispatch

/// Runs an action every `interval` seconds on `queue` (a global queue by default) until
/// cancelled: the daemon's periodic work (progress reports, watchdogs, probes) waits on a
/// timer, not in a sleeping thread. Timers that share a serial queue never run at once, so
/// they need one of dispatch's worker threads at a time between them.
public final class RepeatingTimer: @unchecked Sendable {
    // @unchecked: a dispatch source may be resumed and cancelled from any thread.
    private let source: any DispatchSourceTimer

    public init(interval: Double, leeway: Double = 0.01, queue: DispatchQueue = .global(), action: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + interval, repeating: interval, leeway: .nanoseconds(Int(leeway * 1e9)))
        source.setEventHandler(handler: action)
        source.resume()
    }

    /// Stops it; an action already running finishes.
    public func cancel() { source.cancel() }

    deinit { source.cancel() }
}
