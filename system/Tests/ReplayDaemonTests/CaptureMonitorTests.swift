import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayIPC
import Testing

@Suite struct CaptureMonitorTests {
    @Test func eachWatcherHearsOncePerTransitionInOrderAndNotOfItsOwnCapture() throws {
        let monitor = CaptureMonitor()
        let (daemonSide, appSide) = try socketPair()
        _ = monitor.watch(daemonSide, pid: 42)
        monitor.begin(.recording("rec-1"))
        monitor.begin(.recording("rec-2"))   // still "screen recording": no new event
        monitor.begin(.appCapture(pid: 42, id: 1))   // the watcher's own capture: no new event
        monitor.end(.recording("rec-1"))
        monitor.end(.recording("rec-2"))
        monitor.begin(.appCapture(pid: 7, id: 2))
        monitor.begin(.broadcast("b-1"))
        monitor.end(.appCapture(pid: 7, id: 2))
        monitor.end(.broadcast("b-1"))

        var received: [[CaptureReason]] = []
        for _ in 0..<6 {
            guard case .captureState(let status)? = try appSide.receive(DaemonEvent.self)?.message else { break }
            received.append(status.reasons)
        }
        #expect(received == [[], [.screenRecording], [], [.inAppCapture], [.broadcast, .inAppCapture], [.broadcast]])
        monitor.end(.appCapture(pid: 42, id: 1))
        guard case .captureState(let last)? = try appSide.receive(DaemonEvent.self)?.message else {
            Issue.record("no final state")
            return
        }
        #expect(last.reasons == [] && !last.isCaptured)
    }
}
