import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Logging
import ReplayCaptureModel
import ReplayDesktop
import ReplayIPC
import ReplayMedia
import ReplaySystem

/// Recording, and the store: what is recorded, and who may see it.
extension ClientConnection {
    static func validate(_ options: RecordingOptions) -> String? {
        if !(1...120).contains(options.fps) { return "fps must be between 1 and 120" }
        if let duration = options.duration, !(duration > 0 && duration <= 86_400) {
            return "duration must be between 0 and 86400 seconds"
        }
        if let rate = options.video.bitRate, !(100_000...100_000_000).contains(rate) {
            return "bit rate must be between 100 kb/s and 100 Mb/s"
        }
        if !(0...51).contains(options.video.crf) { return "crf must be between 0 and 51" }
        let presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"]
        if !presets.contains(options.video.preset) { return "unknown x264 preset '\(options.video.preset)'" }
        if let interval = options.video.keyframeInterval, !(1...1000).contains(interval) {
            return "keyframe interval must be between 1 and 1000 frames"
        }
        for (name, value) in [("audio device", options.audioDevice), ("microphone device", options.microphoneDevice),
                              ("audio application", options.audioApplication)] {
            if let value, value.isEmpty || value.count > 256 || value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                return "the \(name) must be a name of 1 to 256 printable characters"
            }
        }
        if let problem = options.area?.problem { return problem }
        if let excluded = options.excludedWindows, excluded.count > 256 { return "at most 256 windows can be excluded" }
        if let camera = options.camera {
            if let size = camera.size, !(5...50).contains(size) { return "the camera's size must be 5 to 50 percent of the recording's width" }
            if let device = camera.device, device.isEmpty || device.count > 256
                || device.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                return "the camera device must be a name of 1 to 256 printable characters"
            }
        }
        if options.video.quality != nil && options.video.bitRate != nil {
            return "give a quality or a bit rate, not both"
        }
        if options.video.quality == .lossless && options.video.codec == .av1 {
            return "SVT-AV1 has no lossless mode: use h264 or hevc for lossless"
        }
        return nil
    }

    func startRecording(_ options: RecordingOptions) async throws {
        if let problem = Self.validate(options) { throw Refusal(code: .malformedRequest, message: problem) }
        guard recording?.isFinished ?? true else {
            throw Refusal(code: .busy, message: "this connection is already recording")
        }
        let filter = try areaFilter(options.area)
        try requireRoomInStore(for: options.video)
        try await awaitConsent(Self.capabilities(of: options))
        try tellWhoChooses(options.area)
        let session = daemon.makeRecording(id: daemon.store.newID(), options: options, filter: filter)
        try daemon.register(session, by: quotaOwner)
        try recordingStarted(try await start(session), session, options: options)
    }

    /// Starts `session`, registered with the daemon (`awaitStart`); one that could not start
    /// is unregistered.
    func start(_ session: any RecordingControl) async throws -> RecordingStarted {
        let daemon = self.daemon
        return try await awaitStart({ session.start(then: $0) }, release: { daemon.unregister(session) }, abandon: {
            session.stop()
            session.onFinish { _ in daemon.unregister(session) }
        })
    }

    /// The recording runs: the connection owns it (its end stops it), the client and the
    /// indicator hear of it, and its progress goes to the client until its summary.
    private func recordingStarted(_ started: RecordingStarted, _ session: any RecordingControl, options: RecordingOptions) throws {
        recording = session
        var started = started
        if role == .app, let peer { daemon.recordAppRecording(started.id, by: peer) }
        // Only the person's own tools may record unannounced (`--no-notify`, for scripts).
        let announced = role != .person || options.notify != false
        if announced, let warning = daemon.unannouncedWarning { started.warnings.append(warning) }
        daemon.logger.info("recording started", metadata: [
            "recording": "\(started.id)", "size": "\(started.width)x\(started.height)", "fps": "\(options.fps)",
            "peer": "\(peerDescription)",
        ])
        // Said before anything that may say its end; the rest is set up even if the client is gone.
        let told = Result { try self.channel.send(DaemonEvent.recordingStarted(recording: started)) }
        if announced {
            daemon.indicator.began(IndicatedCapture(id: started.id, kind: .recording, who: capturerName),
                                   controls: daemon.pausing.controls(for: session))
        }

        // Progress once a second until the movie is closed, then the summary.
        let channel = self.channel, daemon = self.daemon, pid = peer?.pid
        let isApp = role == .app
        let progress = daemon.parts.timers.repeating(every: 1) {
            try? channel.send(DaemonEvent.progress(progress: session.progress()))
            // An app's recording stops, kept, before the disk is full for everyone.
            if isApp, let disk = daemon.store.diskSpace(), let why = Self.appOverStoreReserve(disk) { session.end(because: why) }
        }
        session.onFinish { summary in
            progress.cancel()
            if announced { daemon.indicator.ended(summary.id) }
            daemon.unregister(session)
            if let pid { daemon.consent.markActive(pid: pid) }
            try? channel.send(DaemonEvent.recordingFinished(summary: summary))
        }
        try told.get()
    }

    /// A store whose disk cannot hold the first second refuses the recording before it starts,
    /// instead of failing a second later with an empty movie.
    func requireRoomInStore(for video: VideoEncoding) throws {
        guard let disk = daemon.store.diskSpace() else { return }
        let free = disk.free
        let needed = max(1 << 20, video.estimatedBytes(seconds: 1))
        if role == .app, let why = Self.appOverStoreReserve(disk) {
            throw Refusal(code: .quotaExceeded, message: why + "; the app's recording was not started")
        }
        guard free < needed else { return }
        throw Refusal(code: .insufficientStorage, message: String(
            printf: "the recording store's disk is full: %.1f MB free, and the first second of this recording needs about %.1f MB. "
                + "Free some space, or delete recordings you exported (replay recordings list, replay recordings delete ID…)",
            Double(free) / 1_000_000, Double(needed) / 1_000_000))
    }

    /// Why an app may not fill the store's disk any further, or nil while it may.
    static func appOverStoreReserve(_ disk: (free: Int64, size: Int64)) -> String? {
        let reserve = RecordingStore.appReserve(diskSize: disk.size)
        guard disk.free < reserve else { return nil }
        return String(printf: "the recording store's disk is down to %.1f MB free, and apps' recordings leave %.1f MB for the rest of the system",
                      Double(disk.free) / 1_000_000, Double(reserve) / 1_000_000)
    }

    /// What a recording of `options` asks the person for.
    static func capabilities(of options: RecordingOptions) -> ConsentBroker.Capabilities {
        var capabilities: ConsentBroker.Capabilities = .screen
        if options.appAudio { capabilities.insert(.appAudio) }
        if options.microphone { capabilities.insert(.microphone) }
        if options.camera != nil { capabilities.insert(.camera) }
        return capabilities
    }

    /// Tells the person why nothing happens yet: the desktop's dialog is asking (portal, no
    /// choice kept for this kind of source), or the next click picks the window (X11).
    func tellWhoChooses(_ area: CaptureArea?) throws {
        switch daemon.portalWillAsk(for: area) {
        case true?:
            // An app's recording waits for the dialog too; only the person's tools hear why.
            guard role == .person else { return }
            try channel.send(DaemonEvent.waitingForScreenChoice(seconds: Int(daemon.configuration.screenChoiceTimeout)))
        case false?:
            return
        case nil:
            if case .pickWindow(let seconds) = area { try channel.send(DaemonEvent.waitingForWindowPick(seconds: seconds)) }
        }
    }

    /// Who may record which part: the person anything; an app a monitor or a region (parts of
    /// the screen it has consent for) or a window, of which it sees only its own windows'
    /// pixels, so another app's window records black; only the person picks by clicking.
    func areaFilter(_ area: CaptureArea?) throws -> WindowFilter {
        switch area {
        case .pickWindow?:
            try requirePerson("ask the person to click a window")
            return .everything
        case .window? where role == .app:
            return .onlyProcess(peer?.pid ?? -1)
        default:
            return .everything
        }
    }

    func stopRecording() throws {
        guard let recording, !recording.isFinished else {
            throw Refusal(code: .outOfOrder, message: "stopRecording without a recording running on this connection", closing: true)
        }
        recording.stop()
    }

    /// Pauses or resumes a recording: the person any running one (named, or the only one), an
    /// app only the one its own connection started.
    func controlRecording(_ id: String?, pause: Bool) async throws {
        let session: any RecordingControl
        if role == .person {
            session = try daemon.runningRecording(id)
        } else {
            guard let own = recording, !own.isFinished, id == nil || id == own.id else {
                throw Refusal(code: .notPermitted, message: "apps can pause and resume only the recording their connection started")
            }
            session = own
        }
        let pausing = daemon.pausing, who = peerDescription
        if let error = try await awaitAnswer({ pausing.setPaused(pause, session, by: who, then: $0) }) { throw error }
        try channel.send(pause ? DaemonEvent.recordingPaused(id: session.id) : DaemonEvent.recordingResumed(id: session.id))
    }

    func listRecordings() throws {
        try requirePerson("list recordings")
        try channel.send(DaemonEvent.recordings(list: daemon.store.list()))
    }

    /// Sends the stored movie, or (another container, a span) a copy made for the export.
    func export(id: String, container: MovieContainer, from: Double?, to: Double?) async throws {
        try requirePerson("export recordings")
        let span = try Self.exportSpan(from: from, to: to)
        guard let info = daemon.store.info(id: id), let path = daemon.store.moviePath(id: id) else {
            throw Refusal(code: .notFound, message: "no recording with id '\(id)'")
        }
        if let span, span.lowerBound >= info.duration {
            throw Refusal(code: .malformedRequest, message: "the span starts at \(span.lowerBound) s, at or after the end of \(id) (\(info.duration) s)")
        }
        guard container == .matroska || span != nil else { return try await sendMovie(at: path, id: id) }
        // The streams copied (the span cut) into a file of the store's own, sent, then removed.
        // In a short-lived process of its own: FFmpeg's demuxer reads the file, and replayd
        // links no FFmpeg. This connection's later requests wait for it, no thread does.
        let copy = daemon.store.directory.appendingPathComponent(".export-\(UUID().uuidString).\(container == .matroska ? "mkv" : "mp4")")
        let removeCopy: @Sendable () -> Void = { try? FileManager.default.removeItem(at: copy) }
        let captures = daemon.parts.captures, job = RemuxJob(container: container, span: span)
        let failure = try await awaitAnswer({ captures.remux(path.path, to: copy.path, job, then: $0) }, late: { _ in removeCopy() })
        defer { removeCopy() }
        if let failure {
            let what = span.map { "\($0.lowerBound)–\($0.upperBound) s of \(id)" } ?? id
            throw Refusal(code: .internalError, message: "cannot export \(what) as \(container == .matroska ? "Matroska" : "MP4"): \(failure.message)")
        }
        try await sendMovie(at: copy, id: id)
    }

    /// The span an export asked for: nil for the whole movie; a start alone runs to the end,
    /// an end alone from the start.
    static func exportSpan(from: Double?, to: Double?) throws -> Range<Double>? {
        guard from != nil || to != nil else { return nil }
        let start = from ?? 0, end = to ?? .greatestFiniteMagnitude
        guard start.isFinite, end.isFinite, start >= 0, start < end else {
            throw Refusal(code: .malformedRequest, message: "an export's span must have 0 ≤ from < to, in seconds (got from \(from.map { "\($0)" } ?? "absent"), to \(to.map { "\($0)" } ?? "absent"))")
        }
        return start..<end
    }

    /// Streams the file at `path` as `exportBegin`, `exportChunk`s and `exportEnd`, at the pace
    /// the client reads: a chunk is sent once fewer than 4 MB are queued, this connection's
    /// later requests wait meanwhile, no thread does. A client that hung up is no error: it is gone.
    func sendMovie(at path: URL, id: String) async throws {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path.path, flags: O_RDONLY)
        } catch {
            throw Refusal(code: .notFound, message: "no recording with id '\(id)'")
        }
        let size = try file.size()
        try channel.send(DaemonEvent.exportBegin(size: size))
        while try await channel.room(below: 4 << 20) {
            let chunk = try file.read(upTo: 1 << 20)
            guard !chunk.isEmpty else { return try channel.send(DaemonEvent.exportEnd) }
            try chunk.withUnsafeBytes { try channel.sendBulk(DaemonEvent.exportChunk, body: $0) }
        }
    }

    func delete(id: String) throws {
        try requirePerson("delete recordings from the store")
        try deleteFinished(id: id)
    }

    func previewURL(id: String) async throws {
        try requirePerson("open previews")
        try channel.send(DaemonEvent.previewURL(url: try await pageURL(for: id)))
    }

    /// ReplayKit's discardRecording: an app may throw away a recording it made itself.
    func discard(id: String) throws {
        try requireOwnRecording(id)
        try deleteFinished(id: id)
        daemon.forgetAppRecording(id)
    }

    /// The app's preview handle: the page goes to the person's agents, never to the app.
    func showPreview(id: String) async throws {
        let peer = try requireOwnRecording(id)
        let offer = PreviewOffer(recordingID: id, executable: peer.executable ?? "unknown app", pageURL: try await pageURL(for: id))
        // Answered once an agent has it: the desktop's preview may be started for it first.
        let consent = daemon.consent
        if let failure = try await awaitAnswer({ consent.offer(.previewOffered(offer: offer), shown: $0) }) {
            throw Refusal(code: .failedToShowPreview, message: "the preview could not be shown: \(failure)")
        }
        try channel.send(DaemonEvent.previewShown)
    }

    /// The asking process, if it is the one that made recording `id`.
    @discardableResult
    private func requireOwnRecording(_ id: String) throws -> PeerIdentity {
        guard let peer, daemon.isAppRecording(id, madeBy: peer) else {
            throw Refusal(code: .notPermitted, message: "this app did not make recording '\(id)'")
        }
        return peer
    }

    private func deleteFinished(id: String) throws {
        guard daemon.store.info(id: id) != nil else { throw Refusal(code: .notFound, message: "no recording with id '\(id)'") }
        guard !daemon.activeRecordings.contains(id) else {
            throw Refusal(code: .busy, message: "recording '\(id)' is still running; stop it first")
        }
        daemon.store.delete(id: id)
        daemon.previews.revoke(id)
        try channel.send(DaemonEvent.recordingDeleted(id: id))
    }

    /// A fresh one-time link to the recording's preview page (each request gets its own).
    private func pageURL(for id: String) async throws -> String {
        guard daemon.store.info(id: id) != nil else { throw Refusal(code: .notFound, message: "no recording with id '\(id)'") }
        return daemon.previewLink(for: id, base: try await pagesBaseURL())
    }
}
