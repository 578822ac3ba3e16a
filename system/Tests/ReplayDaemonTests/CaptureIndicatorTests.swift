import Foundation
import Logging
import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayIPC
@testable import ReplaySession
import Testing

/// What the indicator says and offers, paused or not, and the one path by which pauses reach
/// both the session and the indicator.
@Suite struct CaptureIndicatorTests {
    @Test func aRunningRecordingOffersPauseAndAPausedOneSaysSoAndOffersResume() {
        var capture = IndicatedCapture(id: "rec", kind: .recording, who: IndicatedCapture.person)
        #expect(capture.summary == "Recording the screen")
        #expect(capture.body == "The replay command is recording your screen.")
        #expect(capture.actions(pausable: true).map(\.key) == ["pause", "stop", "default"])
        #expect(capture.actions(pausable: true).map(\.label) == ["Pause", "Stop", "Stop"])

        capture.paused = true
        #expect(capture.summary == "Recording paused")
        #expect(capture.body.hasPrefix("The replay command paused recording your screen"))
        #expect(capture.actions(pausable: true).map(\.key) == ["resume", "stop", "default"])
        #expect(capture.actions(pausable: true).first?.label == "Resume")
        #expect(capture.endedSummary == "Screen recording ended")
    }

    @Test func whatCannotBePausedFromTheNotificationOffersStopOnly() {
        let broadcast = IndicatedCapture(id: "b", kind: .broadcast(service: "Twitch"), who: "An app")
        #expect(broadcast.actions(pausable: false).map(\.key) == ["stop", "default"])
        var clips = IndicatedCapture(id: "c", kind: .clipBuffer, who: IndicatedCapture.person)
        clips.paused = true
        #expect(clips.summary == "Clip buffering paused")
    }

    @Test func aSavedClipIsToldItsLengthRoundedWithItsActionOrNone() {
        let clip = { (duration: Double) in ClipSaved(id: "clip-1", duration: duration, asked: nil, frames: 1, bytes: 1) }
        let open = IndicatedNotice.Action(label: "Open preview") {}
        #expect(IndicatedNotice.clipSaved(clip(29.6), open: open).summary == "Saved the last 30 s")
        #expect(IndicatedNotice.clipSaved(clip(30.4), open: open).summary == "Saved the last 30 s")
        #expect(IndicatedNotice.clipSaved(clip(0.3), open: open).summary == "Saved the last 1 s")
        #expect(IndicatedNotice.clipSaved(clip(12), open: open).body.contains("clip-1"))
        #expect(IndicatedNotice.clipSaved(clip(12), open: open).actions == [IndicatedAction(key: "open", label: "Open preview"),
                                                                             IndicatedAction(key: "default", label: "Open preview")])
        #expect(IndicatedNotice.clipSaved(clip(12), open: nil).actions.isEmpty)
    }

    /// A pause from a client and a resume from the notification's button both reach the
    /// session and the indicator, in that order; a refused change tells the indicator nothing.
    @Test func pausesFromAnywhereReachTheSessionAndTheIndicator() async throws {
        let rig = try RecordingSessionTests.Rig()
        defer { rig.cleanUp() }
        let indicator = FakeIndicator()
        let pausing = SessionPausing(indicator: indicator, logger: Logger(label: "test"))
        _ = try await rig.session.start()
        let id = rig.session.id
        indicator.began(IndicatedCapture(id: id, kind: .recording, who: "x"), controls: pausing.controls(for: rig.session))

        try await pausing.setPausedAndWait(true, rig.session, by: "a client")
        #expect(rig.session.phase == .paused)
        let controls = try #require(indicator.controls(of: id))
        controls.setPaused?(false)
        #expect(rig.session.phase == .running)
        controls.setPaused?(true)
        #expect(rig.session.phase == .paused)
        #expect(indicator.told.dropFirst() == [.paused(id, true), .paused(id, false), .paused(id, true)])

        controls.stop()
        _ = try await rig.session.waitUntilFinished()
        await #expect(throws: DaemonError.self) { try await pausing.setPausedAndWait(false, rig.session, by: "a client") }
        controls.setPaused?(false)
        #expect(indicator.told.count == 4, "a refused resume is not announced: \(indicator.told)")
    }
}
