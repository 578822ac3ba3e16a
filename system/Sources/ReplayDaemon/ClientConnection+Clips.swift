import FoundationEssentials
import Logging
import ReplayCaptureModel
import ReplayDesktop
import ReplayIPC
import ReplayLoopbackServer
import ReplayMedia
import ReplaySystem
import Synchronization

/// Clip buffering: the last minutes kept, saved into the store on request.
extension ClientConnection {
    /// Longest buffer.
    static let longestClipBuffer = 3600.0
    /// Longer buffers spill: their packets go to an unlinked file in the store as each
    /// second completes, so memory holds about a second whatever the length.
    static let longestClipBufferInMemory = 60.0
    /// The default budgets: of memory, and of disk for a buffer that spills.
    static let defaultClipBudget = 512 << 20
    static let defaultSpilledClipBudget = 4 << 30
    /// What a spilling buffer reserves of the memory every buffer shares (`CaptureQuota`):
    /// the second being encoded, a few MB at any rate a screen needs.
    static let spilledClipMemory = 16 << 20

    func startClipBuffering(_ options: RecordingOptions, length: Double, byteBudget: Int?, hotkey: String?) async throws {
        if let problem = Self.validate(options) { throw Refusal(code: .malformedRequest, message: problem) }
        guard (1...Self.longestClipBuffer).contains(length) else {
            throw Refusal(code: .malformedRequest, message: "a clip buffer keeps 1 to \(Int(Self.longestClipBuffer)) seconds")
        }
        let spills = length > Self.longestClipBufferInMemory
        var budget = byteBudget ?? Self.defaultClipBudget
        if spills && byteBudget == nil {
            // Unasked, a buffer on disk takes what the store's disk can spare, up to 4 GiB.
            let spare = (daemon.store.freeBytes() ?? 0) / 2 - daemon.state.withLock { $0.quota.diskBytesReserved }
            budget = Int(max(min(Int64(Self.defaultSpilledClipBudget), spare), 1 << 20))
        }
        guard (1 << 20...1 << 32).contains(budget) else {
            throw Refusal(code: .malformedRequest, message: "a clip buffer's memory budget is 1 MiB to 4 GiB")
        }
        guard runningClipBuffer() == nil else {
            throw Refusal(code: .busy, message: role == .person
                ? "clip buffering is already on (`replay clip stop` first)" : "this connection is already buffering clips")
        }
        let areaFilter = try areaFilter(options.area)
        var chord: KeyChord?
        if let hotkey {
            try requirePerson("grab a key on the whole desktop")
            guard hotkey.count <= 64, let parsed = KeyChord(hotkey) else {
                throw Refusal(code: .malformedRequest, message: "unknown hotkey '\(hotkey.prefix(64))': write it as Ctrl+Alt+S, Super+F9, Shift+Print…")
            }
            chord = parsed
        }
        try await awaitConsent(Self.capabilities(of: options))
        try tellWhoChooses(options.area)

        var buffered = options
        buffered.duration = nil
        // An app keeps its own windows only, as its in-app capture sees them: it may be sent the clip.
        let filter: WindowFilter = role == .app ? .onlyProcess(peer?.pid ?? -1) : areaFilter
        let session = daemon.makeRecording(
            id: "clips-" + LoopbackServer.randomToken(bytes: 6), options: buffered,
            destination: .clipBuffer(length: MediaTime(seconds: length), byteBudget: budget, spills: spills), filter: filter)
        try daemon.register(session, by: quotaOwner, clipBytes: spills ? min(budget, Self.spilledClipMemory) : budget,
                            diskBytes: spills ? Int64(budget) : 0)
        _ = try await start(session)
        try await clipBufferStarted(session, options: options, length: length, budget: budget, hotkey: hotkey, chord: chord)
    }

    /// The buffer runs: its hotkey is grabbed, its owner keeps it, the client and the indicator hear of it.
    private func clipBufferStarted(_ session: any RecordingControl, options: RecordingOptions, length: Double, budget: Int,
                                   hotkey: String?, chord: KeyChord?) async throws {
        let announced = role != .person || options.notify != false
        var grab: (any HotkeyRelease)?
        if let chord {
            let daemon = self.daemon
            do {
                grab = try daemon.parts.desktop.grabHotkey(chord) {
                    session.saveClip(last: nil, trigger: .hotkey, as: daemon.store.newID()) { result in
                        switch result {
                        case .success(let saved):
                            daemon.logger.info("hotkey saved a clip", metadata: ["recording": "\(saved.id)"])
                            // A key press has no window to answer in: the desktop says what it saved.
                            if announced { daemon.indicator.tell(.clipSaved(saved, open: daemon.openPreviewAction(for: saved.id))) }
                        case .failure(let error):
                            daemon.logger.warning("hotkey: \(error.description)")
                        }
                    }
                }
            } catch {
                // Refused once the buffer has ended, so a new one may start at once.
                session.stop()
                _ = await session.finished()
                daemon.unregister(session)
                throw Refusal(code: .captureFailed, message: "cannot use \(hotkey ?? "the hotkey"): \(error)")
            }
        }
        if role == .person {
            daemon.state.withLock { $0.personClipBuffer = session }
        } else {
            clipBuffer = session
        }
        if announced {
            daemon.indicator.began(IndicatedCapture(id: session.id, kind: .clipBuffer, who: capturerName),
                                   controls: daemon.pausing.controls(for: session))
        }
        let daemon = self.daemon
        session.onFinish { [grab] summary in
            grab?.release()
            if announced { daemon.indicator.ended(summary.id) }
            daemon.unregister(session)
            daemon.state.withLock { state in
                if state.personClipBuffer === session { state.personClipBuffer = nil }
            }
            daemon.logger.info("clip buffering ended", metadata: ["clipBuffer": "\(summary.id)", "error": "\(summary.error ?? "none")"])
        }
        daemon.logger.info("clip buffering started", metadata: [
            "clipBuffer": "\(session.id)", "length": "\(length)", "budget": "\(budget)", "peer": "\(peerDescription)"])
        try channel.send(DaemonEvent.clipBufferingStarted(status: try clipStatus(of: session)))
    }

    func saveClip(last: Double?) async throws {
        if let last, !(last > 0 && last <= Self.longestClipBuffer) {
            throw Refusal(code: .malformedRequest, message: "a clip lasts more than 0 and up to \(Int(Self.longestClipBuffer)) seconds")
        }
        guard let session = runningClipBuffer() else {
            throw Refusal(code: .outOfOrder, message: "clip buffering is not on")
        }
        // Writing a long clip takes a while: this connection's later requests wait, no thread does.
        let clipID = daemon.store.newID()
        let saved = try await awaitAnswer { done in
            session.saveClip(last: last.map { MediaTime(seconds: $0) }, trigger: .command, as: clipID, then: done)
        }.get()
        try channel.send(DaemonEvent.clipSaved(clip: saved))
        guard role == .app, let path = daemon.store.moviePath(id: saved.id) else { return }
        // An app's clip is its own windows: it is sent the movie, and the store keeps nothing.
        defer { _ = daemon.store.delete(id: saved.id) }
        try await sendMovie(at: path, id: saved.id)
    }

    func sendClipStatus() throws {
        let status = try runningClipBuffer().map { session throws in try clipStatus(of: session) }
        try channel.send(DaemonEvent.clipStatus(status: status))
    }

    func stopClipBuffering() async throws {
        guard let session = runningClipBuffer() else {
            throw Refusal(code: .outOfOrder, message: "clip buffering is not on")
        }
        session.stop()
        // Said once its capture process is gone; no thread waits meanwhile.
        _ = await session.finished()
        if role == .app { clipBuffer = nil }
        try channel.send(DaemonEvent.clipBufferingStopped)
    }

    /// The person's buffer (in the daemon), or this app connection's own.
    private func runningClipBuffer() -> (any RecordingControl)? {
        let session = role == .person ? daemon.state.withLock { $0.personClipBuffer } : clipBuffer
        return session.flatMap { $0.isFinished ? nil : $0 }
    }

    private func clipStatus(of session: any RecordingControl) throws -> ClipStatus {
        guard let status = session.clipStatus() else { throw Refusal(code: .internalError, message: "the clip buffer is not running") }
        return status
    }
}
