import ReplayCaptureModel
import ReplayIPC
import Synchronization

/// Knows every capture running (recordings, in-app captures, later broadcasts and
/// mirroring) and tells watching apps when their answer to "is the screen captured?"
/// changes: once per transition, in order, with the reasons.
final class CaptureMonitor: Sendable {
    enum Activity: Hashable, Sendable {
        case recording(String)
        case broadcast(String)
        case mirroring
        /// In-app capture by the process with this pid: captured for everyone else.
        case appCapture(pid: Int32, id: Int)
    }

    private struct Watcher {
        let channel: ClientOutbox
        let pid: Int32
        var lastSent: CaptureStatus?
    }

    private struct State {
        var activities: Set<Activity> = []
        var watchers: [Int: Watcher] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())

    func begin(_ activity: Activity) {
        _ = state.withLock { $0.activities.insert(activity) }
        publish()
    }

    func end(_ activity: Activity) {
        state.withLock { _ = $0.activities.remove(activity) }
        publish()
    }

    /// Starts sending `captureState` to `channel`: now, then on each change.
    func watch(_ channel: ClientOutbox, pid: Int32) -> Int {
        let id = state.withLock { state in
            state.nextID += 1
            state.watchers[state.nextID] = Watcher(channel: channel, pid: pid)
            return state.nextID
        }
        publish()
        return id
    }

    func unwatch(_ id: Int) {
        _ = state.withLock { $0.watchers.removeValue(forKey: id) }
    }

    func status(for pid: Int32?) -> CaptureStatus {
        state.withLock { Self.status(of: $0.activities, for: pid) }
    }

    private static func status(of activities: Set<Activity>, for pid: Int32?) -> CaptureStatus {
        var reasons = Set<CaptureReason>()
        for activity in activities {
            switch activity {
            case .recording: reasons.insert(.screenRecording)
            case .broadcast: reasons.insert(.broadcast)
            case .mirroring: reasons.insert(.mirroring)
            case .appCapture(let capturer, _) where capturer != pid: reasons.insert(.inAppCapture)
            case .appCapture: break
            }
        }
        return CaptureStatus(reasons: Array(reasons))
    }

    private func publish() {
        state.withLock { state in
            for (id, watcher) in state.watchers {
                let status = Self.status(of: state.activities, for: watcher.pid)
                guard status != watcher.lastSent else { continue }
                state.watchers[id]?.lastSent = status
                // Under the lock, so changes leave in the order they happened: a send only queues
                // (ClientOutbox never waits for the client).
                try? watcher.channel.send(DaemonEvent.captureState(status: status))
            }
        }
    }
}
