import Logging
import ReplayCaptureModel
import ReplayIPC
import Synchronization

/// The one way recordings are paused and resumed: the person's `replay`, apps and the
/// notification's own Pause and Resume all come here, so the indicator follows whichever
/// did it.
final class SessionPausing: Sendable {
    private let indicator: any CaptureIndicator
    private let logger: Logger
    /// Held across a change and telling the indicator: two changes at once reach it in the
    /// order they reached the session, so the notification ends as the session is.
    private let order = Mutex(())

    init(indicator: any CaptureIndicator, logger: Logger) {
        self.indicator = indicator
        self.logger = logger
    }

    /// Pauses (true) or resumes (false) `session`, has the indicator say so, then calls `done`
    /// with nil or why it could not; `who` is for the log. A capture process answers in the
    /// order it was asked, and a session in replayd's own process at once, under the lock: two
    /// changes at once reach the indicator in the order they reached the session.
    func setPaused(_ paused: Bool, _ session: any RecordingControl, by who: String,
                   then done: @escaping @Sendable (DaemonError?) -> Void = { _ in }) {
        let indicator = self.indicator, logger = self.logger
        order.withLock { _ in
            session.setPaused(paused) { error in
                if let error { return done(error) }
                indicator.paused(session.id, paused)
                logger.info(paused ? "recording paused" : "recording resumed", metadata: ["recording": "\(session.id)", "by": "\(who)"])
                done(nil)
            }
        }
    }

    /// What the announcement of `session` may do to it: stop it, pause and resume it.
    func controls(for session: any RecordingControl) -> IndicatorControls {
        IndicatorControls(stop: { session.stop() }, setPaused: { [self] paused in
            setPaused(paused, session, by: "the desktop's notification") { [logger] error in
                guard let error else { return }
                logger.warning("cannot \(paused ? "pause" : "resume") from the notification: \(error.message)",
                               metadata: ["recording": "\(session.id)"])
            }
        })
    }
}
