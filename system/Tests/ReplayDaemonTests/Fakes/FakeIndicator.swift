import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayIPC
import Synchronization

/// An indicator that remembers what it was told, in order, and keeps each capture's controls
/// so a test can press its buttons.
final class FakeIndicator: CaptureIndicator {
    enum Told: Equatable {
        case began(IndicatedCapture)
        case paused(String, Bool)
        case ended(String)
        case notice(summary: String)
    }

    private let log = Mutex<[Told]>([])
    private let controls = Mutex<[String: IndicatorControls]>([:])

    var told: [Told] { log.withLock { $0 } }
    var reach: IndicatorStatus { IndicatorStatus(kind: .notifications) }

    /// The controls the capture `id` began with.
    func controls(of id: String) -> IndicatorControls? { controls.withLock { $0[id] } }

    func began(_ capture: IndicatedCapture, controls: IndicatorControls) {
        self.controls.withLock { $0[capture.id] = controls }
        log.withLock { $0.append(.began(capture)) }
    }

    func paused(_ id: String, _ paused: Bool) { log.withLock { $0.append(.paused(id, paused)) } }
    func ended(_ id: String) { log.withLock { $0.append(.ended(id)) } }
    func tell(_ notice: IndicatedNotice) { log.withLock { $0.append(.notice(summary: notice.summary)) } }
}
