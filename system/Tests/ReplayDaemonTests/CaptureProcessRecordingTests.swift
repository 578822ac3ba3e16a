import Foundation
import Logging
import ReplayCapture
@testable import ReplayDaemon
import ReplayIPC
import ReplayMedia
@testable import ReplaySession
import ReplaySystem
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A capture process played by the test: a real process (`sleep`) whose end the script
/// decides, and a thread that speaks the channel as `replay-capture` would, or would not.
struct ScriptedCaptureLauncher: CaptureProcessLauncher {
    /// Runs on a thread of its own with the process's end of the channel and the process.
    let script: @Sendable (CaptureChannel, ChildProcess) -> Void
    var timers: any Timers = DispatchTimers()

    func launch(id: String) throws -> (CaptureProcessHandle, CaptureChannel) {
        let (ours, theirs) = try CaptureChannel.pair()
        let process = try ChildProcess(path: "/bin/sleep", arguments: ["60"], environment: [:])
        let script = self.script
        Thread.detachNewThread {
            script(theirs, process)
            theirs.close()
        }
        return (CaptureProcessHandle(process, timers: timers), ours)
    }

    func remux(_ input: String, to output: String, _ job: RemuxJob, then done: @escaping @Sendable (DaemonError?) -> Void) {
        done(DaemonError(code: .internalError, message: "no remux in these tests"))
    }
}

@Suite struct CaptureProcessRecordingTests {
    let store: RecordingStore
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("capture-process-\(UUID().uuidString)")
        store = try RecordingStore(directory: directory)
    }

    func recording(_ id: String? = nil, destination: RecordingDestination = .store,
                   script: @escaping @Sendable (CaptureChannel, ChildProcess) -> Void) -> CaptureProcessRecording {
        let plan = CaptureStart(id: id ?? store.newID(), options: RecordingOptions(), destination: destination, onlyProcess: nil,
                                backend: .x11(display: nil), protectedWindows: [])
        return CaptureProcessRecording(plan: plan, launcher: ScriptedCaptureLauncher(script: script), store: store,
                                       protectedWindows: ProtectedWindows(), keepToken: { _ in }, logger: Logger(label: "test"))
    }

    /// Waits for the start command, as the real process does first.
    static func awaitStart(_ channel: CaptureChannel) -> CaptureStart? {
        guard let (command, descriptors) = channel.receive(CaptureCommand.self), case .start(let plan) = command else { return nil }
        descriptors.forEach { close($0) }
        return plan
    }

    /// A process that starts (once `gate` opens, if one is given) and runs until told to stop.
    static func wellBehaved(after gate: Completion<Void>? = nil, frames: Int = 30) -> @Sendable (CaptureChannel, ChildProcess) -> Void {
        { channel, process in
            guard let plan = awaitStart(channel) else { return }
            gate?.wait()
            runUntilStopped(plan, channel, process, frames: frames)
        }
    }

    /// Says it started, runs until told to stop, then finishes with `frames` and exits.
    static func runUntilStopped(_ plan: CaptureStart, _ channel: CaptureChannel, _ process: ChildProcess, frames: Int = 30) {
        try? channel.send(status(.running))
        try? channel.send(CaptureReport.started(RecordingStarted(id: plan.id, width: 64, height: 48, warnings: [])))
        while let (command, _) = channel.receive(CaptureCommand.self), command != .stop {}
        try? channel.send(CaptureReport.finished(RecordingSummary(id: plan.id, duration: Double(frames) / 30, frames: frames, dropped: 0,
                                                                  error: nil)))
        process.signal(SIGTERM)
    }

    static func status(_ phase: SessionPhase, frames: Int = 0) -> CaptureReport {
        .status(CaptureProcessStatus(phase: phase, progress: RecordingProgress(elapsed: 1, frames: frames, dropped: 0, bytes: 0),
                                     clips: nil, restoreToken: nil))
    }

    @Test func aProcessThatDiesWhileStartingFailsTheStartAndKeepsNothing() async throws {
        let session = recording { channel, process in
            _ = Self.awaitStart(channel)
            process.signal(SIGSEGV)
        }
        do {
            _ = try await session.start()
            Issue.record("the start succeeded")
        } catch {
            #expect(error.code == .captureFailed && error.message.contains("was ended by SIGSEGV") && error.message.hasSuffix("while starting"),
                    "\(error)")
        }
        #expect(session.isFinished)
        let summary = try await session.waitUntilFinished()
        #expect(summary.error?.contains("SIGSEGV") == true, "\(summary)")
        #expect(store.list().isEmpty)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".mp4") }.isEmpty)
    }

    @Test func aRefusedStartIsTheProcesssOwnError() async throws {
        let session = recording { channel, process in
            _ = Self.awaitStart(channel)
            try? channel.send(CaptureReport.startFailed(code: .captureFailed, message: "no X display ':9'"))
            process.signal(SIGTERM)
        }
        do {
            _ = try await session.start()
            Issue.record("the start succeeded")
        } catch {
            #expect(error.message == "no X display ':9'")
        }
        #expect(store.list().isEmpty)
    }

    /// The start returns at once; its answer comes when the process gives it (through the
    /// portal, once the person has chosen a screen), and no thread waits meanwhile.
    @Test func theStartIsAnsweredWhenTheProcessStartsNotBefore() async throws {
        let chosen = Completion<Void>()
        let session = recording(script: Self.wellBehaved(after: chosen))
        let answer = Completion<Result<RecordingStarted, DaemonError>>()
        session.start { answer.complete($0) }
        // Returned while the process has not answered: nobody holds a thread for the answer.
        #expect(answer.value == nil)
        #expect(session.phase == .starting)
        chosen.complete(())
        let started = try await answer.value("the start's answer").get()
        #expect(started.width == 64)
        session.stop()
        #expect(try await session.waitUntilFinished().error == nil)
    }

    /// A stop that comes before the start is answered is passed on once it is.
    @Test func aStopWhileStartingEndsTheRecordingOnceStarted() async throws {
        let chosen = Completion<Void>()
        let session = recording(script: Self.wellBehaved(after: chosen, frames: 15))
        let answer = Completion<Result<RecordingStarted, DaemonError>>()
        session.start { answer.complete($0) }
        session.stop()
        chosen.complete(())
        _ = try await answer.value("the start's answer").get()
        #expect(try await session.waitUntilFinished().frames == 15)
    }

    @Test func aProcessThatDiesMidWayEndsItsSessionWithTheSignalAndKeepsNoEmptyMovie() async throws {
        let session = recording { channel, process in
            guard let plan = Self.awaitStart(channel) else { return }
            try? channel.send(Self.status(.running))
            try? channel.send(CaptureReport.started(RecordingStarted(id: plan.id, width: 64, height: 48, warnings: [])))
            try? channel.send(CaptureReport.entry(RecordingInfo(id: plan.id, created: 0, state: .recording, duration: 1, frames: 30,
                                                                dropped: 0, width: 64, height: 48, bytes: 0, error: nil)))
            Thread.sleep(forTimeInterval: 0.2)
            process.signal(SIGSEGV)
        }
        let started = try await session.start()
        #expect(started.width == 64)
        let summary = try await session.waitUntilFinished()
        #expect(summary.error == "the capture process was ended by SIGSEGV (Segmentation fault)", "\(summary)")
        #expect(session.phase == .failed)
        // Its movie file holds no fragment: an entry without a picture is never kept.
        #expect(store.list().isEmpty, "\(store.list())")
    }

    @Test func whatAProcessReportsIsCheckedBeforeTheStoreTakesIt() async throws {
        let other = store.newID()
        #expect(store.save(RecordingInfo(id: other, created: 0, state: .complete, duration: 2, frames: 60, dropped: 0,
                                         width: 64, height: 48, bytes: 1, error: nil)))
        let session = recording { channel, process in
            guard let plan = Self.awaitStart(channel) else { return }
            try? channel.send(Self.status(.running, frames: 12))
            try? channel.send(CaptureReport.started(RecordingStarted(id: plan.id, width: 64, height: 48, warnings: [])))
            // Another recording's entry, and its deletion: neither is the process's to make.
            try? channel.send(CaptureReport.entry(RecordingInfo(id: other, created: 0, state: .interrupted, duration: 0, frames: 0,
                                                                dropped: 0, width: 1, height: 1, bytes: 0, error: "forged")))
            try? channel.send(CaptureReport.discard(id: other))
            // Answers pause, then finishes when told to stop.
            while let (command, _) = channel.receive(CaptureCommand.self) {
                switch command {
                case .pause:
                    try? channel.send(CaptureReport.done)
                    try? channel.send(Self.status(.paused, frames: 12))
                case .stop:
                    try? channel.send(CaptureReport.finished(RecordingSummary(id: plan.id, duration: 3, frames: 90, dropped: 1, error: nil)))
                    process.signal(SIGTERM)
                    return
                default:
                    continue
                }
            }
        }
        _ = try await session.start()
        #expect(session.progress().frames == 12)
        try await session.pause()
        session.stop()
        let summary = try await session.waitUntilFinished()
        #expect(summary.frames == 90 && summary.error == nil, "\(summary)")
        #expect(session.phase == .finished)
        let kept = try #require(store.info(id: other))
        #expect(kept.state == .complete && kept.frames == 60 && kept.error == nil, "\(kept)")
    }

    @Test func aQuestionToAGoneProcessIsAnErrorNotAHang() async throws {
        let session = recording(destination: .clipBuffer(length: MediaTime(seconds: 10), byteBudget: 1 << 20)) { channel, process in
            guard let plan = Self.awaitStart(channel) else { return }
            try? channel.send(Self.status(.running))
            try? channel.send(CaptureReport.started(RecordingStarted(id: plan.id, width: 64, height: 48, warnings: [])))
            // Gone before it answers the save.
            _ = channel.receive(CaptureCommand.self)
            process.signal(SIGKILL)
        }
        _ = try await session.start()
        do {
            _ = try await session.saveClip(last: nil, trigger: .command, as: store.newID())
            Issue.record("a clip was saved by a process that died")
        } catch {
            #expect(error.code == .captureFailed, "\(error)")
        }
        #expect(try await session.waitUntilFinished().error?.contains("SIGKILL") == true)
        #expect(store.list().isEmpty, "the clip's file is not kept: \(store.list())")
    }
}
