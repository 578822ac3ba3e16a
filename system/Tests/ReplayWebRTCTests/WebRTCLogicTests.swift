import FoundationEssentials
import ReplayProcessing
import ReplayWebRTC
import Testing
@testable import replay_webrtc_extension

@Suite struct BitrateControllerTests {
    @Test func heavyLossCutsTheRateByHalfTheLossAndLightLossLetsItGrow() {
        var controller = BitrateController(start: 1000, minimum: 150, maximum: 2500)
        #expect(controller.update(fractionLost: 0.20) == 900)  // 1000 × (1 − 0.1)
        #expect(controller.update(fractionLost: 0.05) == 900)  // 2–10 %: held
        #expect(controller.update(fractionLost: 0) == 972)     // +8 %
        for _ in 0..<50 { controller.update(fractionLost: 0) }
        #expect(controller.kbps == 2500)                       // never above the maximum
        for _ in 0..<50 { controller.update(fractionLost: 1) }
        #expect(controller.kbps == 150)                        // never below the minimum
    }

    @Test func nonsenseLossReportsAreClampedNotTrusted() {
        var controller = BitrateController(start: 1000, minimum: 150, maximum: 2500)
        #expect(controller.update(fractionLost: .nan) == 1080)
        #expect(controller.update(fractionLost: -3) == 1166)
        #expect(controller.update(fractionLost: 7) == 583)
        #expect(BitrateController(start: 10, minimum: 150, maximum: 100).kbps == 150)
    }
}

@Suite struct WebRTCSettingsTests {
    @Test func viewersOnlyByDefaultAndWHIPWhenAsked() throws {
        let viewers = try WebRTCSettings(setup: [:])
        #expect(viewers.viewerPort == WebRTCSettings.defaultViewerPort && viewers.whipURL == nil)
        #expect(viewers.mode == .video && viewers.format == .fit(maxDimension: 960))

        let whip = try WebRTCSettings(setup: ["whip-url": "https://ingest.example.com/whip", "token": "t0k",
                                              "mode": "screencast", "bitrate": "3000"])
        #expect(whip.whipURL?.absoluteString == "https://ingest.example.com/whip" && whip.viewerPort == nil)
        #expect(whip.format == .fit(maxDimension: 1280) && whip.startKbps == 3000 && whip.maxKbps == 3000)

        #expect(try WebRTCSettings(setup: ["viewer-port": "auto"]).viewerPort == 0)
        // WHIP alone, no local viewers.
        #expect(try WebRTCSettings(setup: ["whip-url": "https://example.com/whip", "viewer-port": "0"]).viewerPort == nil)
    }

    @Test(arguments: [
        (["whip-url": "ftp://example.com/whip"], "whip-url must be an http:// or https:// address"),
        (["viewer-port": "70000"], "viewer-port must be a port number"),
        (["viewer-port": "0"], "nothing to publish to"),
        (["mode": "film"], "mode must be video or screencast"),
        (["max-size": "20"], "max-size must be at least 160"),
        (["bitrate": "10"], "bitrate must be kbit/s"),
    ])
    func badSetupIsRefusedWithASentence(setup: [String: String], expected: String) {
        do {
            _ = try WebRTCSettings(setup: setup)
            Issue.record("accepted \(setup)")
        } catch {
            #expect("\(error)".contains(expected), "\(error)")
        }
    }
}

/// The receiver's own estimate (REMB) bounds the rate: down at once, up at the loss-based pace.
@Suite struct BitrateEstimateTests {
    @Test func aLowerEstimateTakesTheRateDownAtOnceAndAHigherOneLetsItGrowBack() {
        var controller = BitrateController(start: 2000, minimum: 150, maximum: 2500)
        #expect(controller.update(fractionLost: 0, estimate: 300) == 300)
        // Loss-free reports cannot take it past the estimate.
        for _ in 0..<10 { controller.update(fractionLost: 0) }
        #expect(controller.kbps == 300 && controller.estimate == 300)
        // The estimate rises: the rate follows at 8 % a report, not in one jump.
        #expect(controller.update(fractionLost: 0, estimate: 2000) == 324)
        for _ in 0..<40 { controller.update(fractionLost: 0) }
        #expect(controller.kbps == 2000)
        // No report and no estimate this second: held.
        #expect(controller.update(fractionLost: nil) == 2000)
        // An estimate below the minimum still leaves the minimum.
        #expect(controller.update(fractionLost: nil, estimate: 50) == 150)
    }
}

/// Service info goes to the host when it changed, and every tenth time anyway.
@Suite struct ServiceInfoFilterTests {
    @Test func aChangeGoesOutAndTheSameGoesOutEveryTenthTime() {
        var filter = ServiceInfoFilter()
        let first = filter.admits(["room": "1"])
        let repeats = (2...10).map { _ in filter.admits(["room": "1"]) }
        let changed = filter.admits(["room": "2"]), again = filter.admits(["room": "2"])
        #expect(first && repeats == Array(repeating: false, count: 8) + [true])
        #expect(changed && !again)
    }
}
