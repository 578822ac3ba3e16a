import Foundation
import ReplayIPC
#if canImport(Glibc)
import Glibc
#endif

/// One `replay record`: asks the daemon to record, shows progress, turns Ctrl-C into a clean
/// stop, and prints the result.
struct RecordingRun {
    let channel: MessageChannel
    let options: RecordingOptions
    let json: Bool

    struct Outcome {
        var id: String?
        var succeeded: Bool
    }

    func perform() throws -> Outcome {
        let started: RecordingStarted
        do {
            try channel.send(ClientRequest.startRecording(options: options))
            let reply = try DaemonClient.nextAfterChoices(channel, area: options.area)
            guard case .recordingStarted(let recording) = reply else {
                throw DaemonClient.Failure(description: "unexpected reply from replayd")
            }
            started = recording
        } catch {
            printError("error: cannot record: \(error)")
            return Outcome(id: nil, succeeded: false)
        }
        for warning in started.warnings { printError("warning: \(warning)") }

        // Ctrl-C (or SIGTERM) stops the recording; the daemon finishes the file and replies.
        var signalSources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { [channel] in try? channel.send(ClientRequest.stopRecording) }
            source.resume()
            signalSources.append(source)
        }
        defer { signalSources.forEach { $0.cancel() } }

        let progress = ProgressLine(enabled: !json && isatty(STDERR_FILENO) == 1)
        if !json && !progress.enabled {
            printError("Recording \(started.id) at \(started.width)x\(started.height)…")
        }
        while true {
            let event: DaemonEvent
            do {
                event = try DaemonClient.next(channel).message
            } catch {
                progress.finish()
                printError("error: recording \(started.id) ended without a result: \(error)")
                return Outcome(id: started.id, succeeded: false)
            }
            switch event {
            case .progress(let update):
                progress.show(update, duration: options.duration)
            case .recordingFinished(let summary):
                progress.finish()
                report(summary)
                return Outcome(id: summary.id, succeeded: summary.error == nil)
            default:
                continue
            }
        }
    }

    private func report(_ summary: RecordingSummary) {
        if json {
            var object: [String: Any] = [
                "id": summary.id, "duration": (summary.duration * 1000).rounded() / 1000,
                "frames": summary.frames, "dropped": summary.dropped,
            ]
            if let error = summary.error { object["error"] = error }
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            print(String(decoding: data, as: UTF8.self))
        } else {
            print("id:       \(summary.id)")
            print("duration: \(String(format: "%.2f", summary.duration)) s")
            print("frames:   \(summary.frames)")
            print("dropped:  \(summary.dropped)")
        }
        if let error = summary.error {
            printError("error: \(error) (what was recorded before it is kept)")
        }
    }
}

/// The live status line on a terminal.
struct ProgressLine {
    let enabled: Bool

    func show(_ progress: RecordingProgress, duration: Double?) {
        guard enabled else { return }
        let total = duration.map { String(format: " / %.0f", $0) } ?? ""
        let megabytes = Double(progress.bytes) / 1_000_000
        let line = String(format: "\r● recording %.1f%@ s · %d frames · %d dropped · %.1f MB  ",
                          progress.elapsed, total, progress.frames, progress.dropped, megabytes)
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish() {
        if enabled { FileHandle.standardError.write(Data("\r\u{1b}[K".utf8)) }
    }
}
