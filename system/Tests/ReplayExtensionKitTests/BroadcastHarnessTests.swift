import ReplayExtensionKit
import ReplayExtensionTesting
import ReplayMedia
import Testing

/// A handler as an extension author would write one, tested offline with the harness.
final class CountingHandler: BroadcastSampleHandler {
    var events: [String] = []
    var lumaSeen: [UInt8] = []

    override func broadcastStarted(setupInfo: [String: String]) {
        events.append("started \(setupInfo["title"] ?? "")")
        updateBroadcastURL("https://example.invalid/watch/\(setupInfo["title"] ?? "")")
    }
    override func broadcastAnnotated(applicationInfo: [String: String]) { events.append("annotated \(applicationInfo["name"] ?? "")") }
    override func broadcastPaused() { events.append("paused") }
    override func broadcastResumed() { events.append("resumed") }
    override func broadcastFinished() { events.append("finished") }

    override func processSampleBuffer(_ sample: SampleBuffer) {
        switch sample {
        case .video(let frame):
            events.append("video")
            lumaSeen.append(frame.pixels.bytes[0])
            if lumaSeen.count == 2 { updateServiceInfo(["frames": "2"]) }
            if frame.pixels.width > 4000 { finishBroadcast(error: "pictures over 4K are not supported") }
        case .audio(let buffer):
            events.append("\(buffer.source == .microphone ? "mic" : "app") \(buffer.frameCount)")
        }
    }
}

@Suite struct BroadcastHarnessTests {
    @Test func aHandlerSeesTheLifecycleAndSamplesInOrderAndReportsToTheHost() {
        let handler = CountingHandler()
        let harness = BroadcastHarness(handler)
        harness.start(setupInfo: ["title": "demo"])
        harness.annotate(["name": "game"])
        harness.sendVideo(width: 64, height: 32, time: .zero, luma: 200)
        harness.sendAudio(.app, frames: 1024, time: .zero)
        harness.sendAudio(.microphone, frames: 960, time: .zero)
        harness.pause()
        harness.resume()
        harness.sendVideo(width: 64, height: 32, time: MediaTime(nanoseconds: 33_000_000), luma: 16)
        harness.finish()
        #expect(handler.events == ["started demo", "annotated game", "video", "app 1024", "mic 960", "paused", "resumed", "video", "finished"])
        #expect(handler.lumaSeen == [200, 16])
        #expect(harness.broadcastURL == "https://example.invalid/watch/demo")
        #expect(harness.serviceInfo == ["frames": "2"])
        #expect(harness.finishError == nil)
    }

    /// After its own `finishBroadcast(error:)` a handler hears only `broadcastFinished`, as
    /// from replayd: no annotation, sample, pause or resume arrives after it has given up.
    @Test func aHandlerThatEndsWithAnErrorHearsOnlyFinishedAfterIt() {
        let handler = CountingHandler()
        let harness = BroadcastHarness(handler)
        harness.start()
        harness.sendVideo(width: 4096 + 64, height: 32, time: .zero)
        #expect(harness.finishError == "pictures over 4K are not supported")
        harness.annotate(["name": "late"])
        harness.sendVideo(width: 64, height: 32, time: .zero)
        harness.sendAudio(.app, time: .zero)
        harness.pause()
        harness.resume()
        harness.finish()
        #expect(handler.events == ["started ", "video", "finished"])
    }
}
