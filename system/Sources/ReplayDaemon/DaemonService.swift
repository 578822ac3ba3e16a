import FoundationEssentials
import ReplayCaptureModel
import ReplaySystem
public import ServiceLifecycle

/// replayd as a swift-service-lifecycle service: it serves until its group shuts down
/// gracefully (SIGTERM, SIGINT) or cancels it, or until a daemon started on demand has been
/// idle for its limit, then finishes and keeps running recordings, ends broadcasts, and
/// returns once their files are closed. Two child tasks, neither holding a thread while it
/// waits.
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
                // The first of a graceful shutdown and the daemon's idle exit; a cancellation
                // ends both waits. Either way the daemon shuts down, unless it has ended by
                // itself (and this task was cancelled for that).
                await withTaskGroup(of: Void.self) { reason in
                    reason.addTask { try? await gracefulShutdown() }
                    reason.addTask { _ = try? await awaitAnswer { idle in daemon.idled.onComplete { idle(()) } } }
                    _ = await reason.next()
                    reason.cancelAll()
                }
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
