import Foundation
import ReplayCaptureModel
import ReplaySystem
public import ServiceLifecycle

/// replayd as a swift-service-lifecycle service: it serves until its group shuts down
/// gracefully (SIGTERM, SIGINT) or cancels it, then finishes and keeps running recordings,
/// ends broadcasts, and returns once their files are closed. An idle daemon that exits by
/// itself returns too. Two child tasks, neither holding a thread while it waits.
public struct DaemonService: Service, CustomStringConvertible {
    let daemon: Daemon

    public init(daemon: Daemon) { self.daemon = daemon }

    public var description: String { "replayd" }

    public func run() async throws {
        let daemon = self.daemon
        let ended = StopFlag()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await daemon.run()
                ended.raise()
            }
            group.addTask {
                // Returns on a graceful shutdown, throws on cancellation: either way the daemon
                // shuts down, unless it has ended by itself (and this task was cancelled for that).
                try? await gracefulShutdown()
                guard !ended.isRaised else { return }
                await daemon.shutdown()
            }
            // The daemon's run ends last (a shutdown stops its listener), or alone: then the
            // wait for a graceful shutdown is cancelled.
            _ = await group.next()
            group.cancelAll()
        }
    }
}
