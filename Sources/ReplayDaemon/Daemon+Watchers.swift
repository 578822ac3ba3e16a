import Foundation
import Logging
import ReplayCapture
import ReplayIPC
import ReplaySystem
import Synchronization

/// Background watches: focus (keeps consent alive), mirroring (a capture reason) and idleness.
extension Daemon {
    /// An app in focus is in use: its consent does not lapse (ReplayKit asks again only
    /// after 8 minutes in the background). Polled, a few times per lapse period.
    func watchFocus() {
        let period = min(5, max(0.2, Double(configuration.consent.idleLimit.nanoseconds) / 4e9))
        Thread.detachNewThread { [self] in
            while !state.withLock({ $0.stopping }) {
                Thread.sleep(forTimeInterval: period)
                let consented = consent.consentedProcesses
                guard !consented.isEmpty, let focused = try? windows.focusedProcess(), consented.contains(focused) else { continue }
                consent.markActive(pid: focused)
            }
        }
    }

    /// Mirroring to a second screen counts as capture for apps that watch: polled from RandR
    /// every two seconds while the display is there.
    func watchMirroring() {
        Thread.detachNewThread { [self] in
            var probe: MirroringProbe?
            var mirrored = false
            while !state.withLock({ $0.stopping }) {
                if probe == nil { probe = try? MirroringProbe(displayName: configuration.displayName) }
                let now: Bool
                do { now = try probe?.isMirroring() ?? false } catch {
                    probe = nil
                    now = false
                }
                if now != mirrored {
                    mirrored = now
                    if now { captureMonitor.begin(.mirroring) } else { captureMonitor.end(.mirroring) }
                    logger.info(now ? "the screen is mirrored to another display" : "the screen is no longer mirrored")
                }
                Thread.sleep(forTimeInterval: 2)
            }
        }
    }

    func watchIdleness(limit: Duration) {
        let limitNanoseconds = limit.components.seconds * 1_000_000_000
        Thread.detachNewThread { [self] in
            while true {
                Thread.sleep(forTimeInterval: 1)
                let idle = state.withLock { state in
                    state.connections == 0 && state.sessions.isEmpty && !state.stopping
                        && state.broadcasts.values.allSatisfy { $0.status.isOver }
                        && MonotonicClock.nanoseconds() - state.lastActivity > limitNanoseconds
                }
                if idle {
                    logger.info("idle for \(limit), exiting")
                    shutdown()
                    return
                }
            }
        }
    }
}
