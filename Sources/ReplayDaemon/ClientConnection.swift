import Foundation
import Logging
import ReplayIPC
import ReplaySystem
import Synchronization

/// Serves one client: reads requests until the client goes away. A malformed request is
/// answered with an error and the connection is closed; the daemon carries on.
struct ClientConnection {
    let daemon: Daemon
    let channel: MessageChannel

    func serve() {
        var recording: RecordingSession?
        let peer = (try? channel.peer())?.description ?? "unknown peer"
        daemon.logger.debug("client connected", metadata: ["peer": "\(peer)"])
        defer {
            // A client that goes away mid-recording ends it; the movie is kept.
            if let recording {
                recording.stop()
                _ = recording.waitUntilFinished()
            }
            channel.close()
        }
        while true {
            let request: ClientRequest
            do {
                guard let received = try channel.receive(ClientRequest.self) else { return }
                request = received.message
            } catch let error as ProtocolError {
                daemon.logger.warning("rejected a malformed request: \(error)", metadata: ["peer": "\(peer)"])
                try? channel.send(DaemonEvent.error(code: .malformedRequest, message: error.description))
                return
            } catch {
                return
            }
            do {
                try handle(request, recording: &recording)
            } catch {
                daemon.logger.warning("request failed: \(error)")
                try? channel.send(DaemonEvent.error(code: .internalError, message: "\(error)"))
            }
        }
    }

    private func handle(_ request: ClientRequest, recording: inout RecordingSession?) throws {
        switch request {
        case .startRecording(let options):
            if let problem = Self.validate(options) {
                try channel.send(DaemonEvent.error(code: .malformedRequest, message: problem))
                return
            }
            guard recording?.isFinished ?? true else {
                try channel.send(DaemonEvent.error(code: .busy, message: "this connection is already recording"))
                return
            }
            recording = try startRecording(options)
        case .stopRecording:
            guard let session = recording else {
                try channel.send(DaemonEvent.error(code: .notFound, message: "no recording is running on this connection"))
                return
            }
            session.stop()
        case .listRecordings:
            try channel.send(DaemonEvent.recordings(daemon.store.list()))
        case .exportRecording(let id):
            try export(id: id)
        case .status:
            try channel.send(DaemonEvent.status(DaemonStatus(
                pid: getpid(), display: daemon.configuration.displayName ?? ProcessInfo.processInfo.environment["DISPLAY"],
                activeRecordings: daemon.activeRecordings)))
        }
    }

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
        return nil
    }

    private func startRecording(_ options: RecordingOptions) throws -> RecordingSession? {
        let session = RecordingSession(
            id: daemon.store.newID(), options: options, store: daemon.store,
            displayName: daemon.configuration.displayName, logger: daemon.logger)
        guard daemon.register(session) else {
            try channel.send(DaemonEvent.error(code: .busy, message: "replayd is shutting down"))
            return nil
        }
        let started: RecordingStarted
        do {
            started = try session.start()
        } catch {
            daemon.unregister(session)
            try channel.send(DaemonEvent.error(code: .captureFailed, message: "\(error)"))
            return nil
        }
        daemon.logger.info("recording started", metadata: [
            "recording": "\(started.id)", "size": "\(started.width)x\(started.height)", "fps": "\(options.fps)",
        ])
        try channel.send(DaemonEvent.recordingStarted(started))

        // Progress once a second until the movie is closed, then the summary.
        let channel = self.channel, daemon = self.daemon
        Thread.detachNewThread {
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                let summary = session.waitUntilFinished()
                daemon.unregister(session)
                try? channel.send(DaemonEvent.recordingFinished(summary))
                done.signal()
            }
            while done.wait(timeout: .now() + 1) == .timedOut {
                try? channel.send(DaemonEvent.progress(session.progress()))
            }
        }
        return session
    }

    private func export(id: String) throws {
        guard daemon.store.info(id: id) != nil, let path = daemon.store.moviePath(id: id),
              let handle = FileHandle(forReadingAtPath: path.path) else {
            try channel.send(DaemonEvent.error(code: .notFound, message: "no recording with id '\(id)'"))
            return
        }
        defer { try? handle.close() }
        let size = daemon.store.fileSize(id: id)
        try channel.send(DaemonEvent.exportBegin(size: size))
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            try channel.send(DaemonEvent.exportChunk, body: [UInt8](chunk))
        }
        try channel.send(DaemonEvent.exportEnd)
    }
}
