import ReplayExtensionKit
import ReplayExtensionTesting
import ReplayIPC
import ReplayMedia
import Testing

/// A handler that keeps time of its own: it asks for a tick every `interval` when the
/// broadcast starts, and notes ticks, repeats and drops.
final class TickingHandler: BroadcastSampleHandler {
    let interval: Duration?
    var events: [String] = []
    var tickTimes: [MediaTime] = []

    init(interval: Duration? = .seconds(1)) {
        self.interval = interval
        super.init()
    }

    override func broadcastStarted(setupInfo: [String: String]) {
        events.append("started")
        if let interval { requestTicks(every: interval) }
    }
    override func broadcastTick(at time: MediaTime) {
        tickTimes.append(time)
        events.append("tick \(time.nanoseconds / 1_000_000)")
        if setupStopsTicksAt == time { requestTicks(every: nil) }
    }
    override func broadcastDroppedFrames(_ count: Int, total: Int) { events.append("dropped \(count) of \(total)") }
    override func processSampleBuffer(_ sample: SampleBuffer) {
        if case .video(let frame) = sample { events.append(frame.isRepeat ? "repeat" : "picture") }
    }
    override func broadcastFinished() { events.append("finished") }

    /// The tick at which it stops asking for ticks.
    var setupStopsTicksAt: MediaTime?
}

/// The harness's clock, ticks, drops, repeats and the misbehaviour replayd punishes.
@Suite struct HarnessClockTests {
    @Test func aRepeatedPictureSaysSo() {
        let handler = TickingHandler(interval: nil)
        let harness = BroadcastHarness(handler)
        harness.start()
        harness.sendVideo(width: 64, height: 32, time: .zero)
        harness.sendVideo(width: 64, height: 32, time: MediaTime(seconds: 0.25), isRepeat: true)
        #expect(handler.events == ["started", "picture", "repeat"])
    }

    /// Drops are told as they happen, with no picture needed to carry them: a handler that
    /// holds every surface still hears what it is missing.
    @Test func dropsAreToldAsTheyHappen() {
        let handler = TickingHandler(interval: nil)
        let harness = BroadcastHarness(handler)
        harness.start()
        harness.dropFrames(2)
        harness.sendVideo(width: 64, height: 32, time: .zero)
        harness.sendVideo(width: 64, height: 32, time: MediaTime(seconds: 0.1))
        harness.dropFrames(1)
        harness.dropFrames(4)
        harness.sendVideo(width: 64, height: 32, time: MediaTime(seconds: 0.2))
        #expect(handler.events == ["started", "dropped 2 of 2", "picture", "picture", "dropped 1 of 3", "dropped 4 of 7", "picture"])
    }

    /// Ticks come on the harness's clock, with no sample at all (a still screen), paused or
    /// not, at the times they were due; none before the start or after the finish.
    @Test func ticksComeOnTheHarnessesClockWithoutSamples() {
        let handler = TickingHandler(interval: .milliseconds(500))
        let harness = BroadcastHarness(handler, now: MediaTime(seconds: 100))
        harness.advance(by: .seconds(2))
        #expect(handler.tickTimes.isEmpty, "no tick before the start")
        harness.start()
        harness.advance(by: .milliseconds(1200))
        harness.pause()
        harness.advance(by: .milliseconds(300))
        #expect(handler.tickTimes == [102.5, 103, 103.5].map { MediaTime(seconds: $0) })
        #expect(harness.now == MediaTime(seconds: 103.5))
        harness.finish()
        harness.advance(by: .seconds(5))
        #expect(handler.tickTimes.count == 3, "no tick after the finish")
        #expect(handler.events.last == "finished")
    }

    @Test func aHandlerMayStopItsTicks() {
        let handler = TickingHandler(interval: .seconds(1))
        handler.setupStopsTicksAt = MediaTime(seconds: 2)
        let harness = BroadcastHarness(handler)
        harness.start()
        harness.advance(by: .seconds(10))
        #expect(handler.tickTimes == [1, 2].map { MediaTime(seconds: $0) })
    }

    /// A short hang costs the ticks due in it but one, which comes late; the rhythm goes on from it.
    @Test func aShortHangCoalescesTheTicksItMissed() {
        let handler = TickingHandler(interval: .seconds(1))
        let harness = BroadcastHarness(handler)
        harness.start()
        harness.hang(for: .milliseconds(3500))
        #expect(harness.failure == nil)
        harness.advance(by: .seconds(1))
        #expect(handler.tickTimes == [3.5, 4.5].map { MediaTime(seconds: $0) })
    }

    /// From replayd's heartbeat timeout on, a hang is fatal: the extension is killed, and its
    /// handler hears nothing more, not even `broadcastFinished`.
    @Test func aHangOfFiveSecondsEndsTheBroadcastAsReplaydWould() {
        let handler = TickingHandler(interval: .seconds(1))
        let harness = BroadcastHarness(handler)
        harness.start()
        harness.hang(for: .seconds(5))
        #expect(harness.failure == BroadcastLimits.hangFailure())
        #expect(harness.failure == "the extension stopped responding (no heartbeat for 5 s) and was stopped")
        harness.sendVideo(width: 64, height: 32, time: .zero)
        harness.advance(by: .seconds(3))
        harness.finish()
        #expect(handler.events == ["started"])
    }

    @Test func overTheMemoryLimitTheExtensionIsStoppedInMebibytes() {
        let handler = TickingHandler(interval: nil)
        let harness = BroadcastHarness(handler, extensionID: "myservice")
        harness.start()
        harness.useMemory(BroadcastLimits.memory)
        #expect(harness.failure == nil, "the limit itself is allowed")
        harness.useMemory(54_386_688)
        #expect(harness.failure == "the extension 'myservice' used more than 50 MiB of memory (51.9 MiB) and was stopped")
        harness.sendVideo(width: 64, height: 32, time: .zero)
        harness.finish()
        #expect(handler.events == ["started"])
    }
}
