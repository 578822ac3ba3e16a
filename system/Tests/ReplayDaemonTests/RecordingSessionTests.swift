import Foundation
import Logging
import ReplayCapture
import ReplayCodec
@testable import ReplayDaemon
import ReplayIPC
import ReplayMedia
import Testing
@testable import ReplaySession

/// The recording session's life, driven through fakes behind the capture seam: no display,
/// no encoder, no threads of the test's own; each test runs in milliseconds.
@Suite struct RecordingSessionTests {
    struct Rig {
        let backend: FakeCaptureBackend
        let sink: FakeMovieSink
        let clock = ManualClock()
        let directory: URL
        let store: RecordingStore
        let session: RecordingSession

        init(audio: [AudioSource] = [], sink: FakeMovieSink = FakeMovieSink(), options: RecordingOptions = RecordingOptions(appAudio: false)) throws {
            backend = FakeCaptureBackend(audio: audio)
            self.sink = sink
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("session-\(UUID().uuidString)")
            store = try RecordingStore(directory: directory)
            session = RecordingSession(
                id: store.newID(), options: options, store: store,
                parts: RecordingParts(capture: backend, movies: sink, clock: clock),
                protectedWindows: ProtectedWindows(), logger: Logger(label: "test"))
        }

        var screen: FakeScreen { backend.screen }

        /// Pictures at 30 fps from `start` for `seconds`.
        func frames(from start: Double, seconds: Double) {
            for index in 0..<Int((seconds * 30).rounded()) { screen.send(.frame(at: start + Double(index) / 30)) }
        }

        func cleanUp() { try? FileManager.default.removeItem(at: directory) }
    }

    static let interval = 1.0 / 30

    /// `duration` counts what is recorded: a pause holds the stop back by as long as it lasted.
    @Test func aDurationDoesNotCountTimeSpentPaused() async throws {
        let rig = try Rig(options: RecordingOptions(duration: 0.2, appAudio: false))
        defer { rig.cleanUp() }
        rig.clock.set(100)
        _ = try await rig.session.start()
        rig.clock.set(100.05)
        try await rig.session.pause()
        // Well past the duration in real time, but only 0.05 s recorded: still going. (Real time
        // that passes on purpose, with no event to await; it holds no thread.)
        try await Task.sleep(for: .milliseconds(500))
        #expect(!rig.session.isFinished)
        rig.clock.set(100.5)
        try rig.session.resume()
        // 0.15 s more of recording time passes; the stop comes at the next check.
        rig.clock.set(100.66)
        await eventually("the recording stopped once 0.2 s were recorded") { rig.session.isFinished }
        let summary = try await rig.session.waitUntilFinished()
        #expect(abs(summary.duration - 0.2) < 0.02, "\(summary)")
    }

    @Test func pauseThenResumeLeavesNoGapAndNoOverlap() async throws {
        let rig = try Rig(audio: [.app], options: RecordingOptions(appAudio: true))
        defer { rig.cleanUp() }
        rig.clock.set(100)
        _ = try await rig.session.start()
        rig.frames(from: 100, seconds: 1)
        rig.backend.audio[.app]!.play(from: 100, seconds: 1)
        rig.clock.set(101)
        try await rig.session.pause()
        #expect(rig.session.phase == .paused)
        // Captured while paused: none of it may reach the movie.
        rig.frames(from: 101, seconds: 2)
        rig.backend.audio[.app]!.play(from: 101, seconds: 2)
        rig.clock.set(103)
        try rig.session.resume()
        #expect(rig.session.phase == .running)
        rig.frames(from: 103, seconds: 1)
        rig.backend.audio[.app]!.play(from: 103, seconds: 1)
        rig.clock.set(104)
        // Let the fakes deliver everything before the stop.
        rig.screen.send(.frame(at: 103.999))
        await eventually("61 pictures written") { rig.sink.videoFrames == 61 }
        rig.session.stop()
        let summary = try await rig.session.waitUntilFinished()

        let times = rig.sink.written.videoTimes.map(\.seconds)
        #expect(summary.error == nil)
        #expect(times.count == 61)
        let steps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(steps.allSatisfy { $0 > 0 }, "timestamps go forward: no overlap")
        #expect(steps.allSatisfy { $0 <= Self.interval + 0.001 }, "no step longer than a frame: no gap where it was paused")
        #expect(abs(times.last! - 1.999) < 0.002)
        #expect(abs(summary.duration - 2) < 0.001, "two seconds were recorded, two were paused")
        // 2 s of 48 kHz audio, as the video: the paused second is left out, not kept or padded.
        let audio = Double(rig.sink.written.audioFrames[.app] ?? 0) / 48_000
        #expect(abs(audio - 2) < 0.03, "audio \(audio) s")
        #expect(rig.session.phase == .finished)
    }

    /// `cfr`: a still screen, a pause and the end still give one frame per 1/30 s slot, no more, no less.
    @Test func aConstantFrameRateFillsEverySlotThroughStillnessPausesAndTheEnd() async throws {
        let rig = try Rig(options: RecordingOptions(appAudio: false, frameRateMode: .cfr))
        defer { rig.cleanUp() }
        rig.clock.set(100)
        _ = try await rig.session.start()
        #expect(rig.sink.written.format?.frameRateMode == .cfr)
        rig.frames(from: 100, seconds: 0.5)
        // Still from 0.5 s: the capture's repeat a quarter second later, then nothing.
        rig.screen.send(.frame(at: 100.75))
        rig.clock.set(101)
        try await rig.session.pause()
        rig.screen.send(.frame(at: 101.5))
        rig.clock.set(102)
        try rig.session.resume()
        // 1.2 s of movie: slot 36.
        rig.screen.send(.frame(at: 102.2))
        await eventually("37 frames written") { rig.sink.videoFrames == 37 }
        rig.clock.set(102.5)
        rig.session.stop()
        let summary = try await rig.session.waitUntilFinished()

        #expect(abs(summary.duration - 1.5) < 0.001)
        // 1.5 s at 30 fps: slots 0 … 44, each at its place on the grid.
        #expect(rig.sink.written.videoTimes == (0..<45).map { MediaTime.samples(Int64($0), rate: 30) })
    }

    @Test func aStopWhilePausedEndsTheMovieWhereThePauseBegan() async throws {
        let rig = try Rig()
        defer { rig.cleanUp() }
        _ = try await rig.session.start()
        rig.frames(from: 100, seconds: 1)
        rig.clock.set(101)
        try await rig.session.pause()
        rig.clock.set(107)
        rig.session.stop()
        let summary = try await rig.session.waitUntilFinished()
        #expect(abs(summary.duration - 1) < 0.001)
        #expect(rig.sink.written.finished)
    }

    @Test func aResizeKeepsTheRecordingGoingAtItsOwnSize() async throws {
        let rig = try Rig()
        defer { rig.cleanUp() }
        _ = try await rig.session.start()
        rig.frames(from: 100, seconds: 0.5)
        rig.screen.send(.resize(width: 96, height: 40))
        rig.frames(from: 100.5, seconds: 0.5)
        // Wait until the writer took every picture, so the stop cannot cut any off.
        while rig.sink.written.videoTimes.count < 30 { sched_yield() }
        rig.clock.set(101)
        rig.session.stop()
        let summary = try await rig.session.waitUntilFinished()
        #expect(summary.error == nil)
        #expect(summary.frames == 30, "the pictures after the resize are recorded too")
        let sizes = rig.sink.written.videoSizes
        #expect(sizes.count == 30 && sizes.allSatisfy { $0 == "64x48" }, "the movie keeps its size: \(sizes)")
        #expect(rig.sink.written.finished && !rig.sink.written.abandoned)
        #expect(rig.session.phase == .finished)
    }

    @Test func aFullDiskEndsTheRecordingWithAClearErrorAndStopsCapture() async throws {
        let rig = try Rig(sink: FakeMovieSink(failAfterFrames: 5))
        defer { rig.cleanUp() }
        _ = try await rig.session.start()
        rig.frames(from: 100, seconds: 1)
        let summary = try await rig.session.waitUntilFinished()
        #expect(summary.error?.contains("No space left on device") == true)
        #expect(summary.frames == 5)
        #expect(rig.sink.written.abandoned, "cut back to its last whole fragment")
        try await rig.screen.finished.value("the screen's end")
        #expect(!rig.screen.isRunning, "capture stops with the writer")
    }

    @Test func aLostDisplayEndsTheRecordingWithItsReason() async throws {
        let rig = try Rig()
        defer { rig.cleanUp() }
        _ = try await rig.session.start()
        rig.frames(from: 100, seconds: 0.2)
        rig.screen.send(.fail("the X server closed the connection"))
        let summary = try await rig.session.waitUntilFinished()
        #expect(summary.error == "the X server closed the connection")
        #expect(rig.sink.written.finished)
    }

    @Test func aStopDuringTheStartIsHonouredOnceStarted() async throws {
        let rig = try Rig()
        defer { rig.cleanUp() }
        let gate = rig.backend.holdScreen()
        let started = Completion<Result<RecordingStarted, DaemonError>>()
        let session = rig.session
        // The held start blocks its caller in the capture backend, as a real one does: on a thread of its own.
        Thread.detachNewThread { session.start(then: { started.complete($0) }) }
        try await rig.backend.screenRequested.value("the request for the screen")
        #expect(session.phase == .starting)
        session.stop()
        session.stop()
        gate.signal()
        if case .failure(let error) = try await started.value("the start's answer") { Issue.record("start failed: \(error)") }
        let summary = try await session.waitUntilFinished()
        #expect(summary.error == nil)
        #expect(session.phase == .finished)
        #expect(rig.sink.written.finished)
    }

    @Test func twoStopsAndAStopAfterTheEndChangeNothing() async throws {
        let rig = try Rig()
        defer { rig.cleanUp() }
        _ = try await rig.session.start()
        rig.frames(from: 100, seconds: 0.3)
        rig.clock.set(100.3)
        rig.session.stop()
        rig.clock.set(105)
        rig.session.stop()
        let first = try await rig.session.waitUntilFinished()
        rig.session.stop()
        #expect(try await rig.session.waitUntilFinished() == first)
        #expect(abs(first.duration - 0.3) < 0.001, "the first stop decides where the movie ends")
        await #expect(throws: DaemonError.self) { try await rig.session.pause() }
    }

    @Test func aScreenThatCannotBeOpenedFailsTheStartAndKeepsNothing() async throws {
        let rig = try Rig()
        defer { rig.cleanUp() }
        rig.backend.refuseScreen(CaptureError(.noDisplay, "cannot open display :99"))
        await #expect(throws: DaemonError(code: .captureFailed, message: "cannot open display :99")) { try await rig.session.start() }
        #expect(rig.session.phase == .failed)
        #expect(rig.sink.written.format == nil, "no movie was opened")
        #expect(try await rig.session.waitUntilFinished().error == "cannot open display :99")
    }

    @Test func missingAudioIsAWarningNotAFailure() async throws {
        let rig = try Rig(options: RecordingOptions(microphone: true, appAudio: true))
        defer { rig.cleanUp() }
        let started = try await rig.session.start()
        #expect(started.warnings.count == 2)
        #expect(rig.sink.written.format?.audioSources == [])
        rig.session.stop()
        #expect(try await rig.session.waitUntilFinished().error == nil)
    }

    /// A sound source the person named is part of what they asked for: when it cannot be
    /// opened (and they did not ask for best effort) the recording is refused before it starts.
    @Test func aNamedSoundSourceThatCannotBeOpenedRefusesTheStart() async throws {
        let rig = try Rig(options: RecordingOptions(appAudio: true, audioDevice: "nosuch", requireNamedAudio: true))
        defer { rig.cleanUp() }
        await #expect(throws: DaemonError(code: .captureFailed, message: "cannot record app audio from 'nosuch': no audio server (fake)")) {
            try await rig.session.start()
        }
        #expect(rig.sink.written.format == nil, "no movie was opened")
        #expect(rig.store.list().isEmpty)

        let lenient = try Rig(options: RecordingOptions(appAudio: true, audioDevice: "nosuch"))
        defer { lenient.cleanUp() }
        #expect(try await lenient.session.start().warnings == ["app audio not recorded: no audio server (fake)"])
        lenient.session.stop()
        _ = try await lenient.session.waitUntilFinished()
    }

    /// A recording that ends before its first picture leaves no empty entry in the store.
    @Test func aRecordingWithoutAPictureLeavesNothingInTheStore() async throws {
        let rig = try Rig()
        defer { rig.cleanUp() }
        let started = try await rig.session.start()
        #expect(rig.store.info(id: started.id)?.state == .recording, "listed from its start")
        rig.screen.send(.fail("the X server closed the connection"))
        let summary = try await rig.session.waitUntilFinished()
        #expect(summary.frames == 0 && summary.error != nil)
        #expect(rig.store.list().isEmpty, "\(rig.store.list())")
    }

    /// What SIGTERM does to each recording (Daemon.shutdown): stop, then wait. In every phase
    /// it ends with the movie closed properly and kept.
    @Test(arguments: [SessionPhase.starting, .running, .paused, .finishing])
    func shutdownInAnyPhaseKeepsTheMovie(phase: SessionPhase) async throws {
        let rig = try Rig()
        defer { rig.cleanUp() }
        let session = rig.session
        switch phase {
        case .starting:
            let gate = rig.backend.holdScreen()
            Thread.detachNewThread { session.start(then: { _ in }) }
            try await rig.backend.screenRequested.value("the request for the screen")
            session.stop()
            gate.signal()
        case .running, .paused, .finishing:
            _ = try await session.start()
            rig.frames(from: 100, seconds: 0.2)
            if phase == .paused { try await session.pause() }
            if phase == .finishing { session.stop() }
            session.stop()
        default: break
        }
        let summary = try await session.waitUntilFinished()
        #expect(summary.error == nil)
        #expect(rig.sink.written.finished && !rig.sink.written.abandoned)
        #expect(session.phase == .finished)
    }
}

@Suite struct SessionLifecycleTests {
    @Test func aSessionNeverGoesBack() throws {
        var lifecycle = SessionLifecycle()
        let started = lifecycle.didStart()
        #expect(started == .running)
        try lifecycle.pause()
        try lifecycle.pause()
        #expect(lifecycle.phase == .paused)
        try lifecycle.resume()
        let first = lifecycle.stop(), second = lifecycle.stop()
        #expect(first == .finish && second == .ignored)
        #expect(throws: DaemonError.self) { try lifecycle.resume() }
        lifecycle.didFinish()
        #expect(lifecycle.phase == .finished)
        let late = lifecycle.fail("late")
        #expect(!late, "a failure after the end changes nothing")
        #expect(lifecycle.phase == .finished)
    }

    @Test func theFirstFailureIsTheReason() {
        var lifecycle = SessionLifecycle()
        _ = lifecycle.didStart()
        let first = lifecycle.fail("disk full"), second = lifecycle.fail("writer closed")
        #expect(first && !second)
        lifecycle.didFinish()
        #expect(lifecycle.phase == .failed && lifecycle.failure == "disk full")
    }

    @Test func aFailureWhileStartingWindsDownOnceStarted() {
        var lifecycle = SessionLifecycle()
        let failed = lifecycle.fail("display lost")
        let phase = lifecycle.didStart()
        #expect(failed && phase == .finishing)
    }
}

@Suite struct MovieTimelineTests {
    @Test func pausedSpansAreLeftOutAndLaterSamplesMoveBack() {
        var timeline = MovieTimeline(origin: MediaTime(seconds: 10))
        #expect(timeline.movieTime(of: MediaTime(seconds: 9.9)) == nil)
        #expect(timeline.movieTime(of: MediaTime(seconds: 11)) == MediaTime(seconds: 1))
        timeline.pause(at: MediaTime(seconds: 12))
        timeline.resume(at: MediaTime(seconds: 15))
        timeline.pause(at: MediaTime(seconds: 16))
        #expect(timeline.movieTime(of: MediaTime(seconds: 13)) == nil)
        #expect(timeline.movieTime(of: MediaTime(seconds: 15)) == MediaTime(seconds: 2))
        #expect(timeline.movieTime(of: MediaTime(seconds: 17)) == nil, "still paused")
        timeline.resume(at: MediaTime(seconds: 20))
        #expect(timeline.movieTime(of: MediaTime(seconds: 21)) == MediaTime(seconds: 4))
        #expect(timeline.duration(stoppedAt: MediaTime(seconds: 22)) == MediaTime(seconds: 5))
        #expect(timeline.pausedTime == MediaTime(seconds: 7))
    }
}
