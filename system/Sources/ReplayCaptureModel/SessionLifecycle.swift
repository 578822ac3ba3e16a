import ReplayIPC

/// Where a session is in its life. Every recording, broadcast and in-app capture goes
/// starting → running ⇄ paused → finishing → finished (or failed), and never back.
package enum SessionPhase: String, Sendable, Codable {
    case starting, running, paused, finishing, finished, failed

    package var isOver: Bool { self == .finished || self == .failed }
}

/// The rules of a session's life, as a value: each session holds one behind its lock and
/// asks it before acting, so which transition is allowed is decided in one place and
/// tested without capture, encoders or processes.
package struct SessionLifecycle: Sendable, Equatable {
    package private(set) var phase: SessionPhase = .starting
    /// The first reason it failed; later ones are consequences.
    package private(set) var failure: String?
    /// A stop that arrived while starting, honoured as soon as the start is done.
    package private(set) var stopRequested = false

    package init() {}

    /// What `stop()` asks the session to do.
    package enum StopOutcome: Equatable {
        /// Wind down now.
        case finish
        /// Starting: the start winds down when it is done.
        case deferred
        /// Already finishing or over: a second stop changes nothing.
        case ignored
    }

    /// The start is done: running, unless a stop or a failure came meanwhile (then finishing).
    package mutating func didStart() -> SessionPhase {
        guard phase == .starting else { return phase }
        phase = stopRequested || failure != nil ? .finishing : .running
        return phase
    }

    /// The start failed: nothing was kept, the session is over.
    package mutating func didFailToStart(_ why: String) {
        guard !phase.isOver else { return }
        failure = failure ?? why
        phase = .failed
    }

    package mutating func pause() throws(DaemonError) {
        switch phase {
        case .running: phase = .paused
        case .paused: return
        default: throw DaemonError(code: .outOfOrder, message: "cannot pause: the session is \(phase.rawValue)")
        }
    }

    package mutating func resume() throws(DaemonError) {
        switch phase {
        case .paused: phase = .running
        case .running: return
        default: throw DaemonError(code: .outOfOrder, message: "cannot resume: the session is \(phase.rawValue)")
        }
    }

    package mutating func stop() -> StopOutcome {
        switch phase {
        case .starting:
            stopRequested = true
            return .deferred
        case .running, .paused:
            phase = .finishing
            return .finish
        case .finishing, .finished, .failed:
            return .ignored
        }
    }

    /// Records a failure; true when it is the first and the session must now wind down.
    package mutating func fail(_ why: String) -> Bool {
        guard !phase.isOver, failure == nil else { return false }
        failure = why
        if phase == .running || phase == .paused { phase = .finishing }
        return true
    }

    /// Everything is closed: finished, or failed if anything failed on the way.
    package mutating func didFinish() {
        guard !phase.isOver else { return }
        phase = failure == nil ? .finished : .failed
    }
}
