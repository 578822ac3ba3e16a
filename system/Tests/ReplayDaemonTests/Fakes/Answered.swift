import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayIPC
import ReplayMedia
import ReplaySystem
import Testing

/// The deadline of a test's wait for the daemon's answer: it only bounds how long a failing
/// test takes (generous, for a busy machine), and nothing is timed by it.
let answerDeadline = 30.0

struct NeverHappened: Error, CustomStringConvertible {
    let description: String
}

extension Completion {
    /// Awaits it, holding no thread; records an issue (the test fails instead of hanging) and
    /// gives nil if it has not happened within `seconds`.
    func awaited(_ what: String, within seconds: Double = answerDeadline,
                 sourceLocation: SourceLocation = #_sourceLocation) async -> Value? {
        let value = await finished(within: seconds, on: DispatchTimers())
        if value == nil { Issue.record("\(what) did not happen within \(seconds) s", sourceLocation: sourceLocation) }
        return value
    }

    /// Awaits it; throws (after recording the issue) if it has not happened within `seconds`.
    func value(_ what: String, within seconds: Double = answerDeadline,
               sourceLocation: SourceLocation = #_sourceLocation) async throws -> Value {
        guard let value = await awaited(what, within: seconds, sourceLocation: sourceLocation) else {
            throw NeverHappened(description: "\(what) did not happen within \(seconds) s")
        }
        return value
    }
}

/// replayd hands what waits a callback; a test awaits it, holding no thread. An answer that
/// never comes is an issue, and a thrown error that no expectation of a `DaemonError` can take
/// for the daemon's own.
func answered<Value: Sendable>(sourceLocation: SourceLocation = #_sourceLocation,
                               _ ask: (@escaping @Sendable (Result<Value, DaemonError>) -> Void) -> Void) async throws(DaemonError) -> Value {
    let answer = Completion<Result<Value, DaemonError>>()
    ask { answer.complete($0) }
    guard let result = await answer.awaited("the daemon's answer", sourceLocation: sourceLocation) else {
        throw DaemonError(code: ErrorCode(rawValue: "testNeverAnswered"), message: "no answer within \(answerDeadline) s")
    }
    return try result.get()
}

extension RecordingControl {
    /// Awaits the movie being closed.
    func waitUntilFinished(sourceLocation: SourceLocation = #_sourceLocation) async throws -> RecordingSummary {
        let summary = Completion<RecordingSummary>()
        onFinish { summary.complete($0) }
        return try await summary.value("the recording's end", sourceLocation: sourceLocation)
    }

    func start() async throws(DaemonError) -> RecordingStarted { try await answered { start(then: $0) } }

    func pause() async throws(DaemonError) {
        try await answered { done in setPaused(true) { done($0.map(Result.failure) ?? .success(())) } }
    }

    func saveClip(last duration: MediaTime?, trigger: ClipSaveRecord.Trigger, as clipID: String) async throws(DaemonError) -> ClipSaved {
        try await answered { saveClip(last: duration, trigger: trigger, as: clipID, then: $0) }
    }
}

extension AppCaptureControl {
    /// Awaits the capture's end.
    func waitUntilFinished(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let ended = Completion<Void>()
        onFinish { ended.complete(()) }
        try await ended.value("the capture's end", sourceLocation: sourceLocation)
    }

    func start() async throws(DaemonError) -> (width: Int, height: Int) { try await answered { start(then: $0) } }
}

extension BroadcastFeed {
    func open() async throws(DaemonError) -> BroadcastCaptureOpened { try await answered { open(then: $0) } }
}

extension SessionPausing {
    func setPausedAndWait(_ paused: Bool, _ session: any RecordingControl, by who: String) async throws(DaemonError) {
        try await answered { done in setPaused(paused, session, by: who) { done($0.map(Result.failure) ?? .success(())) } }
    }
}

extension ClientOutbox {
    /// True once fewer than `bytes` are queued, false once the connection closed.
    func waitForRoom(below bytes: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Bool {
        let room = Completion<Bool>()
        whenRoom(below: bytes) { room.complete($0) }
        return try await room.value("room in the outbox", sourceLocation: sourceLocation)
    }
}

extension BroadcastSession {
    /// Awaits the broadcast's end; its last status.
    func waitUntilFinished(sourceLocation: SourceLocation = #_sourceLocation) async throws -> BroadcastStatus {
        let status = Completion<BroadcastStatus>()
        onFinish { status.complete($0) }
        return try await status.value("the broadcast's end", sourceLocation: sourceLocation)
    }
}
