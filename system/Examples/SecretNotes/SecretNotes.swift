import ArgumentParser
import ExampleWindow
import Foundation
import OpenReplayKit

/// An app that uses all of OpenReplayKit: it shows a secret, keeps it out of every capture
/// (protected window) and also covers it while the screen is captured, records a replay of
/// itself, and shares its own window.
@main
struct SecretNotes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secret-notes",
        abstract: "Example OpenReplayKit app: a note with a secret that never shows up in a capture.",
        discussion: """
            Opens a window on $DISPLAY, asks replayd to keep it black in every capture, and \
            covers the secret while anything captures the screen. Each step prints one JSON \
            line, so scripts and tests can follow it.

            Examples:
              secret-notes                         (until Ctrl-C)
              secret-notes --record 5              (records a 5 s replay, asks replayd to show its preview)
              secret-notes --share-frames 30       (streams 30 pictures of its own window, reports their colours)
              secret-notes --go-live webrtc --in-app   (asks the person to broadcast its own window into a call)
              secret-notes --clip 5 --clip-file c.mp4  (keeps its own window's last seconds, exports the last 5 s)
            """)

    /// What the note shows instead of its secret while anything captures the screen.
    static let cover = "Hidden while the screen is captured"

    @Option(help: "Window colour: red, green, blue or RRGGBB.")
    var colour = "blue"

    @Option(help: "Window position and size: X,Y,WIDTH,HEIGHT.")
    var geometry = "100,100,480,320"

    @Option(help: "The secret shown on the note.")
    var secret = "the launch code is 0000"

    @Flag(help: "Do not protect the window (so a recording shows it).")
    var noProtect = false

    @Option(help: "Record a replay of this many seconds, then ask replayd to show its preview.")
    var record: Double?

    @Flag(help: "Throw the replay away instead of showing its preview.")
    var discard = false

    @Option(help: "With --record: record only this display (a content filter).")
    var recordMonitor: String?

    @Flag(help: "With --record: record only this app's own window.")
    var recordOwnWindow = false

    @Option(help: "With --record: record only this window (an X id; another app's records black).")
    var recordWindow: UInt32?

    @Option(help: "With --record: paint this window black in the replay (repeatable).")
    var excludeWindow: [UInt32] = []

    @Option(help: "Share this many pictures of the app's own window (in-app capture), then report their colours.")
    var shareFrames: Int?

    @Option(help: "Frames per second of the in-app capture (at most 60).")
    var shareFPS = 30

    @Option(help: "Go live: ask the person to pick a broadcast service (narrowed to this extension id; 'any' for all), then finish after --live-seconds.")
    var goLive: String?

    @Flag(help: "With --go-live: broadcast only this app's own windows (everything else black), not the screen.")
    var inApp = false

    @Option(help: "How long to stay live once the person started the broadcast.")
    var liveSeconds: Double = 5

    @Option(help: "Buffer clips of its own window, and after this many seconds export them (ReplayKit's exportClip) to --clip-file.")
    var clip: Double?

    @Option(help: "Where --clip writes the clip.")
    var clipFile: String?

    @Option(help: "Stay open this many seconds after the other steps (default: until Ctrl-C when no step is asked).")
    var stay: Double?

    @Option(help: "replayd's socket (default: as the replay CLI finds it).")
    var socket: String?

    func validate() throws {
        if parsedGeometry == nil { throw ValidationError("--geometry must be X,Y,WIDTH,HEIGHT with positive sizes") }
        if parsedColour == nil { throw ValidationError("--colour must be red, green, blue or six hex digits") }
        if let shareFrames, shareFrames <= 0 { throw ValidationError("--share-frames must be positive") }
        if !(1...60).contains(shareFPS) { throw ValidationError("--share-fps must be between 1 and 60") }
        if inApp && goLive == nil { throw ValidationError("--in-app goes with --go-live") }
        if (clip == nil) != (clipFile == nil) { throw ValidationError("--clip and --clip-file go together") }
    }

    func run() async throws {
        // validate() has checked both.
        guard let frame = parsedGeometry, let rgb = parsedColour else { throw ValidationError("invalid --geometry or --colour") }
        let (x, y, width, height) = frame
        let window = try NoteWindow(x: x, y: y, width: width, height: height, colour: rgb, title: "Secret notes")
        let recorder = ScreenRecorder(socket: socket)
        let state = CaptureState(socket: socket)
        window.show(state.isCaptured ? Self.cover : "Secret: \(secret)")
        report(["event": "window", "id": Int(window.id)])

        do throws(RecordingError) {
            if !noProtect {
                try await recorder.protect(window: window.id)
                report(["event": "protected", "id": Int(window.id)])
            }
            let changes = try state.changes()
            let secret = self.secret
            let follower = Task {
                for await status in changes {
                    window.show(status.isCaptured ? Self.cover : "Secret: \(secret)")
                    report(["event": "captureState", "captured": status.isCaptured, "reasons": status.reasons.map(\.rawValue)])
                }
            }
            defer { follower.cancel() }

            if let shareFrames { try await share(recorder, frames: shareFrames) }
            if let record {
                var filter: ContentFilter = .screen
                if let recordMonitor { filter = .display(recordMonitor) }
                if recordOwnWindow { filter = .window(window.id) }
                if let recordWindow { filter = .window(recordWindow) }
                try await replay(recorder, seconds: record, filter: filter.excluding(windows: excludeWindow))
            }
            if let goLive { try await broadcast(preferredExtension: goLive == "any" ? nil : goLive) }
            if let clip, let clipFile { try await keepClips(recorder, seconds: clip, to: URL(fileURLWithPath: clipFile)) }
            if let stay {
                try? await Task.sleep(for: .seconds(stay))
            } else if shareFrames == nil && record == nil && goLive == nil && clip == nil {
                try? await Task.sleep(for: .seconds(365 * 86_400))
            }
        } catch {
            report(["event": "error", "code": error.code.rawValue, "message": error.message])
            throw ExitCode(3)
        }
    }

    /// Clip buffering of its own window: keep the last 30 s, export the last `seconds` to `url`.
    private func keepClips(_ recorder: ScreenRecorder, seconds: Double, to url: URL) async throws(RecordingError) {
        try await recorder.startClipBuffering(length: 30)
        report(["event": "clipBuffering"])
        try? await Task.sleep(for: .seconds(seconds))
        try await recorder.exportClip(to: url, duration: seconds)
        report(["event": "clipExported", "path": url.path])
        try await recorder.stopClipBuffering()
    }

    /// In-app capture: only this app's window reaches it; everything else is black.
    private func share(_ recorder: ScreenRecorder, frames: Int) async throws(RecordingError) {
        let stream = try await recorder.startCapture(fps: shareFPS)
        var census = ColourCensus()
        var received = 0
        do {
            for try await frame in stream {
                census.add(frame)
                received += 1
                if received == frames { break }
            }
        } catch let error as RecordingError {
            throw error
        } catch {
            throw RecordingError(.interrupted, "\(error)")
        }
        try await recorder.stopCapture()
        report(["event": "shared", "frames": received, "colours": census.counts])
    }

    /// Live: the person picks the service on replayd's picker; this app follows the state only.
    private func broadcast(preferredExtension: String?) async throws(RecordingError) {
        let controller = BroadcastController(socket: socket)
        let updates = controller.updates()
        try await controller.showPicker(preferredExtension: preferredExtension, scope: inApp ? .app : .screen)
        report(["event": "pickerShown", "scope": inApp ? "app" : "screen"])
        var finishing = false
        for await status in updates {
            var fields: [String: Any] = ["event": "broadcast", "state": status.state.rawValue, "framesSent": status.framesSent,
                                         "scope": status.scope.rawValue]
            if let url = status.broadcastURL { fields["url"] = url }
            if let error = status.lastError { fields["error"] = error }
            // An upload extension's link to its server: connecting, live, reconnecting.
            if let connection = status.serviceInfo["connection"] { fields["connection"] = connection }
            report(fields)
            if status.isOver { break }
            if status.state == .live && !finishing {
                finishing = true
                let seconds = liveSeconds
                Task {
                    try? await Task.sleep(for: .seconds(seconds))
                    try? await controller.pause()
                    try? await controller.resume()
                    try? await controller.finish()
                }
            }
        }
    }

    /// A replay: record, stop, and hand the person the preview (the app never sees the movie).
    private func replay(_ recorder: ScreenRecorder, seconds: Double, filter: ContentFilter) async throws(RecordingError) {
        try await recorder.startRecording(filter: filter)
        report(["event": "recording"])
        try? await Task.sleep(for: .seconds(seconds))
        let preview = try await recorder.stopRecording()
        report(["event": "recorded", "id": preview.recordingID, "duration": preview.duration])
        if discard {
            try await recorder.discardRecording(preview)
            report(["event": "discarded", "id": preview.recordingID])
            return
        }
        do throws(RecordingError) {
            try await preview.show(recorder: recorder)
            report(["event": "previewShown"])
        } catch {
            report(["event": "previewNotShown", "message": error.message])
        }
    }

    private var parsedGeometry: (x: Int, y: Int, width: Int, height: Int)? { NoteWindow.geometry(geometry) }
    private var parsedColour: UInt32? { NoteWindow.colour(colour) }
}

/// One JSON line on standard output, written at once (tests read it while the app runs).
func report(_ fields: [String: Any]) { NoteWindow.report(fields) }
