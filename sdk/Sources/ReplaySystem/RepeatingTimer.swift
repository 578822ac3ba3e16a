import Dispatch

/// Runs an action every `interval` seconds on a global queue until cancelled: the
/// daemon's periodic work (progress reports, watchdogs, probes) waits on a timer, not in
/// a sleeping thread.
public final class RepeatingTimer: @unchecked Sendable {
    // @unchecked: a dispatch source may be resumed and cancelled from any thread.
    private let source: any DispatchSourceTimer

    public init(interval: Double, leeway: Double = 0.01, action: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: .global())
        source.schedule(deadline: .now() + interval, repeating: interval, leeway: .nanoseconds(Int(leeway * 1e9)))
        source.setEventHandler(handler: action)
        source.resume()
    }

    /// Stops it; an action already running finishes.
    public func cancel() { source.cancel() }

    deinit { source.cancel() }
}
