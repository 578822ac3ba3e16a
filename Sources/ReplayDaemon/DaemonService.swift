import Foundation
import ReplayCaptureModel
public import ServiceLifecycle

/// replayd as a swift-service-lifecycle service: it serves until its group shuts down
/// gracefully (SIGTERM, SIGINT), then finishes and keeps running recordings, ends broadcasts,
/// and returns once their files are closed. An idle daemon that exits by itself returns too.
public struct DaemonService: Service, CustomStringConvertible {
    let daemon: Daemon

    public init(daemon: Daemon) { self.daemon = daemon }

    public var description: String { "replayd" }

    public func run() async throws {
        let daemon = self.daemon
        await withGracefulShutdownHandler {
            await daemon.run()
        } onGracefulShutdown: {
            // Finishing recordings blocks until their movies are closed: not on the caller's task.
            Thread.detachNewThread { daemon.shutdown() }
        }
    }
}
