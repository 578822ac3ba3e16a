import Foundation
@_spi(OpenReplayKitInternal) import OpenReplayKit
@_spi(OpenReplayKitInternal) import ReplayIPC
@_spi(OpenReplayKitInternal) import ReplayMedia
import Testing

/// The app SDK against a scripted daemon (`FakeDaemon`): what it sends, what it makes of the
/// answers, and that its async calls give way to cancellation.
@Suite struct ScreenRecorderTests {
    @Test func aRecordingStartsThroughConsentAndStopsIntoAPreviewHandle() async throws {
        let daemon = FakeDaemon({ peer in
            let hello = try peer.welcome()
            guard case .hello(2, "OpenReplayKit", .some(ClientProtocol.minorVersion), let capabilities?) = hello,
                  capabilities.contains("skipsUnknownEvents") else { throw Unexpected("hello was \(hello)") }
            guard case .startRecording(let options) = try peer.expect("startRecording"), options.microphone,
                  options.camera == CameraOverlay(corner: .topLeft) else { throw Unexpected("the options were not the recorder's") }
            peer.send(.waitingForConsent)
            // An event of a later minor version, which the SDK skips.
            peer.sendRaw(json: #"{"hologram":{"depth":3}}"#, body: [1, 2, 3])
            peer.send(.recordingStarted(recording: RecordingStarted(id: "rec-1", width: 640, height: 480, warnings: [])))
            _ = try peer.expect("stopRecording")
            peer.send(.progress(progress: RecordingProgress(elapsed: 2, frames: 60, dropped: 0, bytes: 1000)))
            peer.send(.recordingFinished(summary: RecordingSummary(id: "rec-1", duration: 2.5, frames: 75, dropped: 0, error: nil)))
            try peer.expectHangUp()
        })
        let recorder = ScreenRecorder(connect: daemon.connect)
        recorder.isMicrophoneEnabled = true
        recorder.isCameraEnabled = true
        recorder.cameraCorner = .topLeft
        try await recorder.startRecording()
        #expect(recorder.isRecording)
        let preview = try await recorder.stopRecording()
        #expect(preview.recordingID == "rec-1" && preview.duration == 2.5)
        #expect(!recorder.isRecording)
        #expect(daemon.finish() == [])
    }

    @Test func theDaemonsRefusalsAreTheSDKsOwnCodes() async throws {
        func refusing(_ code: ErrorCode) -> FakeDaemon.Script {
            { peer in
                try peer.welcome()
                _ = try peer.expect("startRecording")
                peer.send(.error(code: code, message: "no, because \(code)"))
                try peer.expectHangUp()
            }
        }
        let daemon = FakeDaemon(refusing(.userDeclined), refusing(.busy), refusing(ErrorCode(rawValue: "solarFlare")),
                                refusing(.unsupported))
        let recorder = ScreenRecorder(connect: daemon.connect)
        let expected: [RecordingError] = [
            RecordingError(.userDeclined, "no, because userDeclined"),
            RecordingError(.attemptToStartInRecordingState, "no, because busy"),
            // A code this SDK does not know: what was being tried, with the daemon's words.
            RecordingError(.failedToStart, "no, because solarFlare"),
            RecordingError(.unsupported, "no, because unsupported"),
        ]
        for error in expected {
            await #expect(throws: error) { try await recorder.startRecording() }
            #expect(!recorder.isRecording)
        }
        #expect(daemon.finish() == [])
    }

    /// The handshake used to run inside the async call, blocking up to 10 s: cancelled in it,
    /// the call now returns `cancelled` and hangs up (before, it ended in the handshake's timeout).
    @Test func aStartCancelledDuringTheHandshakeReturnsAtOnce() async throws {
        let heardHello = Flag()
        let daemon = FakeDaemon({ peer in
            _ = try peer.expect("hello")  // and never answered
            heardHello.raise()
            try peer.expectHangUp()
        })
        let recorder = ScreenRecorder(connect: daemon.connect)
        let start = Task { try await recorder.startRecording() }
        await heardHello.wait()
        start.cancel()
        let error = await #expect(throws: RecordingError.self) { try await start.value }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
        #expect(!recorder.isRecording)
        #expect(daemon.finish() == [])
    }

    /// While the person is asked (up to two minutes), a cancelled start returns and hangs up,
    /// which tells the daemon to forget the question.
    @Test func aStartCancelledWhileThePersonIsAskedReturnsAtOnce() async throws {
        let asking = Flag()
        let daemon = FakeDaemon({ peer in
            try peer.welcome()
            _ = try peer.expect("startCapture")
            peer.send(.waitingForConsent)
            asking.raise()
            try peer.expectHangUp()
        })
        let recorder = ScreenRecorder(connect: daemon.connect)
        let start = Task { _ = try await recorder.startCapture(fps: 30) }
        await asking.wait()
        start.cancel()
        let error = await #expect(throws: RecordingError.self) { try await start.value }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
        // Nothing is left half-started: the next capture may begin.
        await #expect(throws: RecordingError(.attemptToStopNonRecording, "no capture is running")) { try await recorder.stopCapture() }
        #expect(daemon.finish() == [])
    }

    @Test func aStartCancelledBeforeItBeganNeverConnects() async throws {
        let daemon = FakeDaemon()
        let recorder = ScreenRecorder(connect: daemon.connect)
        let start = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await recorder.startRecording()
        }
        let error = await #expect(throws: RecordingError.self) { try await start.value }
        #expect(error?.code == .cancelled)
        #expect(daemon.connections == 0)
        #expect(daemon.finish() == [])
    }

    @Test func aDaemonOfAnotherMajorVersionIsNotUsed() async throws {
        let daemon = FakeDaemon({ peer in
            try peer.welcome(version: 3)
            try peer.expectHangUp()
        })
        let recorder = ScreenRecorder(connect: daemon.connect)
        let error = await #expect(throws: RecordingError.self) { try await recorder.protect(window: 0x0400_0001) }
        #expect(error?.code == .systemDormancy && error?.message.contains("protocol 3") == true, "\(String(describing: error))")
        #expect(daemon.finish() == [])
    }

    @Test func capturedFramesArriveAndTheStreamEndsWithTheCapturesError() async throws {
        let daemon = FakeDaemon({ peer in
            try peer.welcome()
            guard case .startCapture(let options) = try peer.expect("startCapture"), options.fps == 24 else {
                throw Unexpected("the capture's options were not asked")
            }
            peer.send(.captureStarted(width: 4, height: 2, fps: 24))
            peer.send(.capturedFrame(frame: CapturedFrameInfo(time: 1.5, width: 4, height: 2)), body: Array(repeating: 200, count: 12))
            // A picture whose bytes do not match its size is dropped, never trusted.
            peer.send(.capturedFrame(frame: CapturedFrameInfo(time: 1.6, width: 4000, height: 2000)), body: Array(repeating: 0, count: 12))
            peer.send(.captureStopped(error: "content resized to 800x600"))
            _ = try peer.expect("stopCapture")
            try peer.expectHangUp()
        })
        let recorder = ScreenRecorder(connect: daemon.connect)
        var frames: [CapturedFrame] = []
        let ending = await #expect(throws: RecordingError.self) {
            for try await frame in try await recorder.startCapture(fps: 24) { frames.append(frame) }
        }
        #expect(ending?.code == .contentResize)
        #expect(frames.count == 1 && frames.first?.pixels.width == 4 && frames.first?.pixels.height == 2)
        #expect(frames.first?.time.nanoseconds == 1_500_000_000)
        try await recorder.stopCapture()
        #expect(daemon.finish() == [])
    }

    @Test func aClipIsExportedIntoTheAppsFile() async throws {
        let movie: [UInt8] = Array("a movie in three chunks".utf8)
        let daemon = FakeDaemon({ peer in
            try peer.welcome()
            _ = try peer.expect("startClipBuffering")
            peer.send(.clipBufferingStarted(status: ClipStatus(id: "clips-1", buffered: 0, length: 30, bytes: 0, byteBudget: 1 << 20,
                                                                paused: false, width: 640, height: 480)))
            guard case .saveClip(let last) = try peer.expect("saveClip"), last == 5 else { throw Unexpected("saveClip without its length") }
            peer.send(.clipSaved(clip: ClipSaved(id: "clip", duration: 5, asked: 5, frames: 150, bytes: Int64(movie.count))))
            peer.send(.exportBegin(size: Int64(movie.count)))
            for chunk in stride(from: 0, to: movie.count, by: 8) { peer.send(.exportChunk, body: Array(movie[chunk..<min(chunk + 8, movie.count)])) }
            peer.send(.exportEnd)
            _ = try peer.expect("stopClipBuffering")
            peer.send(.clipBufferingStopped)
            try peer.expectHangUp()
        })
        let recorder = ScreenRecorder(connect: daemon.connect)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ork-clip-\(UUID().uuidString).mp4")
        defer { try? FileManager.default.removeItem(at: file) }
        try await recorder.startClipBuffering(length: 30)
        try await recorder.exportClip(to: file, duration: 5)
        #expect(try Data(contentsOf: file) == Data(movie))
        try await recorder.stopClipBuffering()
        #expect(daemon.finish() == [])
    }
}

@Suite struct CaptureStateAndBroadcastTests {
    @Test func captureStateChangesArriveInTheSDKsOwnWords() async throws {
        let subscribed = Flag()
        let daemon = FakeDaemon({ peer in
            try peer.welcome()
            _ = try peer.expect("watchCaptureState")
            peer.send(.captureState(status: ReplayIPC.CaptureStatus(reasons: [])))
            subscribed.waitBlocking()
            peer.send(.captureState(status: ReplayIPC.CaptureStatus(reasons: [.broadcast, .screenRecording])))
            // The daemon goes away: nothing captures through it any more.
        })
        let state = CaptureState(connect: daemon.connect)
        let changes = try state.changes()
        subscribed.raise()
        var seen: [OpenReplayKit.CaptureStatus] = []
        for await status in changes { seen.append(status) }
        #expect(seen == [OpenReplayKit.CaptureStatus(reasons: []), OpenReplayKit.CaptureStatus(reasons: [.screenRecording, .broadcast])])
        #expect(seen.last?.isCaptured == true)
        #expect(daemon.finish() == [])
    }

    @Test func theHostAppFollowsItsBroadcastAndFinishesIt() async throws {
        let daemon = FakeDaemon({ peer in
            try peer.welcome()
            guard case .showBroadcastPicker("file"?, false, .app?, nil) = try peer.expect("showBroadcastPicker") else {
                throw Unexpected("the picker was not asked for the app's windows and the file extension")
            }
            peer.send(.pickerShown)
            peer.send(.broadcastUpdated(status: ReplayIPC.BroadcastStatus(id: "bc-1", extensionID: "file", scope: .app, state: .live,
                                                                           serviceInfo: ["connection": "live"])))
            guard case .stopBroadcast("bc-1"?) = try peer.expect("stopBroadcast") else { throw Unexpected("not the app's broadcast") }
            let finished = ReplayIPC.BroadcastStatus(id: "bc-1", extensionID: "file", scope: .app, state: .finished)
            peer.send(.broadcastUpdated(status: finished))
            peer.send(.broadcasts(list: [finished]))
            // The controller keeps its connection while the app runs: the daemon closes it here.
        })
        let controller = BroadcastController(connect: daemon.connect)
        let updates = controller.updates()
        try await controller.showPicker(preferredExtension: "file", scope: .app)
        var states: [OpenReplayKit.BroadcastStatus.State] = []
        for await status in updates {
            states.append(status.state)
            #expect(status.scope == .app && status.extensionID == "file")
            if status.state == .live {
                #expect(controller.isBroadcasting && controller.serviceInfo["connection"] == "live")
                try await controller.finish()
            }
            if status.isOver { break }
        }
        #expect(states == [.live, .finished])
        #expect(!controller.isBroadcasting)
        #expect(daemon.finish() == [])
    }
}

/// Codes as apps see them: their own, open to additions.
@Suite struct RecordingErrorCodeTests {
    @Test func codesAreValuesThatLaterReleasesCanAddTo() {
        let later = RecordingError.Code(rawValue: "solarFlare")
        #expect(later != .interrupted && later.description == "solarFlare")
        #expect(RecordingError.Code.userDeclined == RecordingError.Code(rawValue: "userDeclined"))
        // A switch over codes needs a default: what an app writes compiles whatever is added.
        func advice(_ code: RecordingError.Code) -> String {
            switch code {
            case .userDeclined: "ask again later"
            case .systemDormancy: "start replayd"
            default: "try again"
            }
        }
        #expect(advice(.userDeclined) == "ask again later" && advice(later) == "try again")
    }
}
