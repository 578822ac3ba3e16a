import Foundation
import Logging
import ReplayCaptureModel
import ReplayDesktop
import ReplayIPC
import ReplaySystem
import Synchronization

/// Background watches, each on a timer: focus (keeps consent alive), mirroring (a capture
/// reason), idleness, and settling after work. X11 has no event for "the focused window's
/// process" or "outputs now clone each other", so those two are probed; the timers stop with
/// the daemon. They share one serial queue, so they never run at once and need one dispatch
/// worker at a time, not one each (dispatch may still keep a second idle one, waking the idle
/// workers in turn).
extension Daemon {
    private static let watchQueue = DispatchQueue(label: "replayd.watches")

    enum BackgroundWatch: Equatable {
        case focus
        case mirroring
        case idleness(Duration)
        case settling
    }

    /// The watches a daemon runs: the two X11 probes only where X11 is what captures (through
    /// the portal they would read XWayland, or no display at all, every few seconds for nothing).
    static func backgroundWatches(capture: CaptureChoice, idleExit: Duration?) -> [BackgroundWatch] {
        var watches: [BackgroundWatch] = []
        if case .x11 = capture { watches += [.focus, .mirroring] }
        if let idleExit { watches.append(.idleness(idleExit)) }
        return watches + [.settling]
    }

    /// An app in focus is in use: its consent does not lapse (ReplayKit asks again only
    /// after 8 minutes in the background). Probed a few times per lapse period.
    func watchFocus() -> RepeatingTimer {
        let period = min(5, max(0.2, Double(configuration.consent.idleLimit.nanoseconds) / 4e9))
        return RepeatingTimer(interval: period, queue: Self.watchQueue) { [self] in
            let consented = consent.consentedProcesses
            guard !consented.isEmpty, let focused = try? windows.focusedProcess(), consented.contains(focused) else { return }
            consent.markActive(pid: focused)
        }
    }

    /// Mirroring to a second screen counts as capture for apps that watch: probed from RandR
    /// every two seconds while the display is there.
    func watchMirroring() -> RepeatingTimer {
        let probe = Mutex<(probe: MirroringProbe?, mirrored: Bool)>((nil, false))
        return RepeatingTimer(interval: 2, queue: Self.watchQueue) { [self] in
            let (changed, now) = probe.withLock { state -> (Bool, Bool) in
                if state.probe == nil { state.probe = try? MirroringProbe(displayName: configuration.displayName) }
                let now: Bool
                do { now = try state.probe?.isMirroring() ?? false } catch {
                    state.probe = nil
                    now = false
                }
                defer { state.mirrored = now }
                return (now != state.mirrored, now)
            }
            guard changed else { return }
            if now { captureMonitor.begin(.mirroring) } else { captureMonitor.end(.mirroring) }
            logger.info(now ? "the screen is mirrored to another display" : "the screen is no longer mirrored")
        }
    }

    /// Once nothing has run for `quiet` (no recording, clip buffer or broadcast, no client come
    /// or gone), gives back what the work left behind: malloc's free pages, and the mappings of
    /// the code it ran (`ProcessMemory.unmapOwnCode`), which a daemon waiting all day for its
    /// next request does not run. Once per quiet spell.
    func watchSettling(quiet: Duration = .seconds(10)) -> RepeatingTimer {
        let settledAfter = Mutex<Int64?>(nil)
        return RepeatingTimer(interval: 5, queue: Self.watchQueue) { [self] in
            guard let lastActivity = state.withLock({ $0.hasNoSessions ? $0.lastActivity : nil }),
                  MonotonicClock.nanoseconds() - lastActivity > quiet.nanoseconds,
                  settledAfter.withLock({ settled in
                      defer { settled = lastActivity }
                      return settled != lastActivity
                  }) else { return }
            ProcessMemory.returnFreedMemory()
            ProcessMemory.unmapOwnCode()
        }
    }

    /// Ends a daemon started on demand once nobody has used it for `limit`.
    func watchIdleness(limit: Duration) -> RepeatingTimer {
        RepeatingTimer(interval: 1, queue: Self.watchQueue) { [self] in
            let idle = state.withLock { state in
                state.connections == 0 && state.hasNoSessions && !state.stopping
                    && MonotonicClock.nanoseconds() - state.lastActivity > limit.nanoseconds
            }
            guard idle else { return }
            logger.info("idle for \(limit), exiting")
            Thread.detachNewThread { [self] in shutdown() }
        }
    }
}
