public import Foundation

/// Asks `probe` every `interval` seconds until it answers (non-nil) or `timeout` seconds have
/// passed; the last answer (possibly nil) is returned. Real servers and daemons get there in
/// their own time: tests wait for a state, never for a fixed delay.
public func poll<T>(timeout: Double, every interval: Double = 0.25, _ probe: () throws -> T?) rethrows -> T? {
    let deadline = Date().addingTimeInterval(timeout)
    repeat {
        if let value = try probe() { return value }
        Thread.sleep(forTimeInterval: interval)
    } while Date() < deadline
    return try probe()
}
