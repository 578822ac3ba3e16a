import FoundationEssentials
import Dispatch
import Logging
import ReplayCaptureModel
import ReplayDesktop
import ReplayIPC
import ReplaySystem
import Synchronization

/// Background watches: focus (keeps consent alive), mirroring (a capture reason), idleness,
/// and settling after work. None ticks while it has nothing to watch, so a daemon left alone
/// wakes no thread and dispatch's idle workers end:
/// - X11 has no event for "the focused window's process" or "outputs now clone each other",
///   so those two are probed on a timer, but only while there is someone to serve: focus
///   while an app holds consent, mirroring while a client is connected (only watching
///   clients are told about it).
/// - Idleness and settling wait for a deadline that each activity (a client or a session
///   come or gone, `noteActivity`) sets again.
/// They share one serial queue, so they never run at once; they stop with the daemon.
extension Daemon {
    private static let watchQueue = DispatchQueue(label: "replayd.watches")

    enum BackgroundWatch: Equatable {
        case focus
        case mirroring
        case idleness(Duration)
        case settling
    }

    /// The running watches' timers.
    struct Watches {
        var focus: (any RepeatingTimerControl)?
        var mirroring: (any RepeatingTimerControl)?
        var idleness: (timer: any DeadlineTimerControl, limit: Duration)?
        var settling: (timer: any DeadlineTimerControl, quiet: Duration)?

        fileprivate func cancel() {
            focus?.cancel()
            mirroring?.cancel()
            idleness?.timer.cancel()
            settling?.timer.cancel()
        }
    }

    /// The watches a daemon runs: the two X11 probes only where X11 is what captures (through
    /// the portal they would read XWayland, or no display at all, every few seconds for nothing).
    static func backgroundWatches(capture: CaptureChoice, idleExit: Duration?) -> [BackgroundWatch] {
        var watches: [BackgroundWatch] = []
        if case .x11 = capture { watches += [.focus, .mirroring] }
        if let idleExit { watches.append(.idleness(idleExit)) }
        return watches + [.settling]
    }

    /// Starts the watches `backgroundWatches` names; `stopWatches` ends them.
    func startWatches() {
        var watches = Watches()
        for watch in Self.backgroundWatches(capture: configuration.capture, idleExit: configuration.idleExit) {
            switch watch {
            case .focus: watches.focus = watchFocus()
            case .mirroring: watches.mirroring = watchMirroring()
            case .idleness(let limit): watches.idleness = (watchIdleness(limit: limit), limit)
            case .settling:
                watches.settling = (watchSettling(quiet: Self.settlingQuiet), Self.settlingQuiet)
            }
        }
        self.watches.withLock { $0 = watches }
        state.withLock { $0.lastActivity = parts.timers.now() }
        noteActivity()
        updateProbes()
    }

    func stopWatches() {
        watches.withLock { watches in
            watches?.cancel()
            watches = nil
        }
    }

    /// How long after the last activity replayd settles (`watchSettling`).
    static let settlingQuiet = Duration.seconds(2)

    /// A session has started: settling is counted from now.
    func sessionStarted() {
        state.withLock { $0.lastActivity = parts.timers.now() }
        noteActivity()
    }

    /// A client or a session came or went (`State.lastActivity` was just set): idleness and
    /// settling are counted from now.
    func noteActivity() {
        watches.withLock { watches in
            if let (timer, limit) = watches?.idleness { timer.fire(after: limit.inSeconds + 0.05) }
            if let (timer, quiet) = watches?.settling { timer.fire(after: quiet.inSeconds + 0.05) }
        }
    }

    /// Runs each X11 probe only while it has someone to serve. Called whenever that may have
    /// changed (a client connected or left, an app was granted consent, a focus tick found
    /// no app holding it); under one lock, so the last call, which saw the latest state, wins.
    func updateProbes() {
        watches.withLock { watches in
            guard let watches else { return }
            if let focus = watches.focus {
                if consent.consentedProcesses.isEmpty { focus.pause() } else { focus.resume(immediately: true) }
            }
            if let mirroring = watches.mirroring {
                if state.withLock({ $0.connections == 0 }) { mirroring.pause() } else { mirroring.resume(immediately: true) }
            }
        }
    }

    /// An app in focus is in use: its consent does not lapse (ReplayKit asks again only
    /// after 8 minutes in the background). Probed a few times per lapse period.
    private func watchFocus() -> any RepeatingTimerControl {
        let period = min(5, max(0.2, configuration.consent.idleLimit.inSeconds / 4))
        return parts.timers.repeating(every: period, on: Self.watchQueue, paused: true) { [self] in
            let consented = consent.consentedProcesses
            guard !consented.isEmpty else { return updateProbes() }
            guard let focused = try? windows.focusedProcess(), consented.contains(focused) else { return }
            consent.markActive(pid: focused)
        }
    }

    /// Mirroring to a second screen counts as capture for apps that watch: probed from RandR
    /// every two seconds while a client is connected, at once when the first one comes.
    private func watchMirroring() -> any RepeatingTimerControl {
        let probe = Mutex<(probe: MirroringProbe?, mirrored: Bool)>((nil, false))
        return parts.timers.repeating(every: 2, on: Self.watchQueue, paused: true) { [self] in
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

    /// Once nothing has come or gone for `quiet` (no client, no session started or ended),
    /// gives back the free pages that work left in malloc's arenas, which glibc would keep for
    /// a daemon that may wait all day for its next request. Once per quiet spell.
    private func watchSettling(quiet: Duration) -> any DeadlineTimerControl {
        parts.timers.deadline(on: Self.watchQueue) { [self] in
            let now = parts.timers.now()
            let quietNow = state.withLock { state in
                now - state.lastActivity >= quiet.nanoseconds
            }
            guard quietNow else { return }
            ProcessMemory.returnFreedMemory()
        }
    }

    /// Ends a daemon started on demand once nobody has used it for `limit`: says so to
    /// `idled`, which `DaemonService` awaits beside a graceful shutdown.
    private func watchIdleness(limit: Duration) -> any DeadlineTimerControl {
        parts.timers.deadline(on: Self.watchQueue) { [self] in
            let now = parts.timers.now()
            let idle = state.withLock { state in
                state.connections == 0 && state.hasNoSessions && !state.stopping
                    && now - state.lastActivity >= limit.nanoseconds
            }
            guard idle else { return }
            logger.info("idle for \(limit), exiting")
            idled.complete(())
        }
    }
}
