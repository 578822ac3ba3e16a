import Foundation
import ReplayIPC
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    @Suite struct InAppCapture {
        /// Issue 46, item 2: on a 4K screen a picture is 12.4 MB, more than the 8 MiB of events a
        /// client may leave unread, and the first one queued cut the app off before it read a
        /// thing. A slow app loses pictures, never its connection: this one reads once a second.
        @Test func aSlowAppOnA4KScreenKeepsItsConnectionAndGetsPictures() throws {
            let fixture = try ReplayFixture(desktop: VirtualDesktop.Options(width: 3840, height: 2160, audio: false, demoScene: false))
            defer { fixture.stop() }
            try fixture.startDaemon(QuotaAttacks.allowThisProcess(in: fixture))
            let channel = try MessageChannel.connect(path: fixture.socket, client: "slow-4k-app")
            defer { channel.close() }
            try channel.send(ClientRequest.startCapture(options: CaptureOptions(fps: 30)))
            var pictures: [(info: CapturedFrameInfo, bytes: Int)] = []
            var stopped: String??
            while pictures.count < 4 && stopped == nil, let (event, body) = try channel.receive(DaemonEvent.self) {
                switch event {
                case .capturedFrame(let info):
                    pictures.append((info, body.count))
                    // The app's work on each picture: a second, while replayd captures 30 more.
                    Thread.sleep(forTimeInterval: 1)
                case .captureStopped(let error): stopped = .some(error)
                case .error(let code, let message): Issue.record("\(code): \(message)")
                default: break
                }
            }
            #expect(stopped == nil, "the capture stopped: \(String(describing: stopped))\n\(fixture.daemonLog.suffix(1500))")
            #expect(pictures.count == 4, "\(pictures.count) pictures before the connection ended\n\(fixture.daemonLog.suffix(1500))")
            #expect(pictures.allSatisfy { $0.info.width == 3840 && $0.info.height == 2160 && $0.bytes == 3840 * 2160 * 3 / 2 },
                    "\(pictures.map { "\($0.info.width)x\($0.info.height) \($0.bytes) bytes" })")
            // Still connected: the stop is answered.
            try channel.send(ClientRequest.stopCapture)
            var answer: DaemonEvent?
            while let (event, _) = try channel.receive(DaemonEvent.self) {
                if case .capturedFrame = event { continue }
                answer = event
                break
            }
            guard case .captureStopped(let error)? = answer else {
                Issue.record("no captureStopped after the stop: \(String(describing: answer))")
                return
            }
            #expect(error == nil)
        }
    }
}
