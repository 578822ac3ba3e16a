import Foundation
import Logging
import ReplayCapture
@testable import ReplayDaemon
import ReplayIPC
@testable import ReplaySession
import Synchronization
import Testing

/// In-app capture with a fake screen and a fake app connection.
@Suite struct AppCaptureSessionTests {
    final class FakeClient: CaptureClient {
        let state = Mutex((delivered: 0, busy: false, gone: false, stopped: [String?]()))
        func deliver(_ info: CapturedFrameInfo, pixels: UnsafeRawBufferPointer) -> CaptureDelivery {
            state.withLock { state in
                if state.gone { return .gone }
                if state.busy { return .busy }
                state.delivered += 1
                return .sent
            }
        }
        func captureStopped(error: String?) { state.withLock { $0.stopped.append(error) } }
    }

    struct Rig {
        let backend = FakeCaptureBackend()
        let client = FakeClient()
        let session: AppCaptureSession

        init() {
            session = AppCaptureSession(pid: 4242, options: CaptureOptions(fps: 60), capture: backend,
                                        protectedWindows: ProtectedWindows(), client: client, logger: Logger(label: "test"))
        }

        func frames(_ count: Int) { for index in 0..<count { backend.screen.send(.frame(at: 100 + Double(index) / 60)) } }
    }

    @Test func aStopEndsTheStreamAndSaysSoOnce() async throws {
        let rig = Rig()
        _ = try await rig.session.start()
        rig.frames(10)
        await eventually("10 pictures delivered") { rig.client.state.withLock { $0.delivered } == 10 }
        rig.session.stop()
        rig.session.stop()
        try await rig.session.waitUntilFinished()
        #expect(rig.client.state.withLock { $0.stopped } == [nil])
        #expect(rig.session.phase == .finished)
    }

    @Test func anAppThatDoesNotKeepUpLosesPicturesNotTheCapture() async throws {
        let rig = Rig()
        _ = try await rig.session.start()
        rig.client.state.withLock { $0.busy = true }
        rig.frames(20)
        await eventually("the fake screen has delivered everything") { rig.backend.screen.counters.captured == 20 }
        rig.client.state.withLock { $0.busy = false }
        rig.frames(1)
        await eventually("a picture after the app caught up") { rig.client.state.withLock { $0.delivered } >= 1 }
        #expect(rig.session.phase == .running)
        rig.session.stop()
        try await rig.session.waitUntilFinished()
    }

    @Test func anAppThatHungUpEndsItsCapture() async throws {
        let rig = Rig()
        _ = try await rig.session.start()
        rig.client.state.withLock { $0.gone = true }
        rig.frames(1)
        try await rig.session.waitUntilFinished()
        #expect(rig.session.phase == .finished)
        try await rig.backend.screen.finished.value("the screen's end")
    }

    @Test func aResizedScreenEndsTheCaptureWithThatReason() async throws {
        let rig = Rig()
        _ = try await rig.session.start()
        rig.backend.screen.send(.resize(width: 1024, height: 768))
        try await rig.session.waitUntilFinished()
        let stopped = rig.client.state.withLock { $0.stopped }
        #expect(stopped.count == 1 && stopped[0]?.contains("content resized") == true, "\(stopped)")
        #expect(rig.session.phase == .failed)
    }
}
