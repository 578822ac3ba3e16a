import Dispatch
import FoundationEssentials
import ReplaySystem
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
    /// The summary goes to standard error when standard output carries the movie (`--output -`).
    var summaryToStandardError = false

    struct Outcome {
        var id: String?
        var succeeded: Bool
        /// The daemon went away mid-recording: nothing more can be asked of it.
        var daemonStopped = false
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
        var recorded: Double = 0
        while true {
            let event: DaemonEvent
            do {
                event = try DaemonClient.next(channel).message
            } catch {
                progress.finish()
                if let pid = try? channel.peer(executableOf: { _ in nil }).pid, ProcessState.hasEnded(pid) {
                    // Said once, with what the person needs: the take is in the store up to its last second.
                    printError("error: replayd stopped while recording (it was killed or crashed). \(started.id) is kept in the store, "
                        + "interrupted after about \(String(printf: "%.0f", recorded)) s; the movie plays up to its last second. "
                        + "Export it with: replay recordings export \(started.id) --to FILE")
                    return Outcome(id: started.id, succeeded: false, daemonStopped: true)
                }
                printError("error: recording \(started.id) ended without a result: \(error)")
                return Outcome(id: started.id, succeeded: false)
            }
            switch event {
            case .progress(let update):
                recorded = update.elapsed
                progress.show(update, duration: options.duration)
            case .recordingFinished(let summary):
                progress.finish()
                report(summary)
                // A recording without a single frame is not kept: there is nothing to export.
                let kept = summary.frames > 0
                return Outcome(id: kept ? summary.id : nil, succeeded: summary.error == nil)
            default:
                continue
            }
        }
    }

    private func report(_ summary: RecordingSummary) {
        let say: (String) -> Void = summaryToStandardError ? { printError($0) } : { print($0) }
        if json {
            struct Report: Encodable {
                let id: String, duration: Double, frames: Int, dropped: Int, error: String?
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let object = Report(id: summary.id, duration: (summary.duration * 1000).rounded() / 1000,
                                frames: summary.frames, dropped: summary.dropped, error: summary.error)
            let data = (try? encoder.encode(object)) ?? Data()
            print(String(decoding: data, as: UTF8.self))
        } else {
            say("id:       \(summary.id)")
            say("duration: \(String(printf: "%.2f", summary.duration)) s")
            say("frames:   \(summary.frames)")
            say("dropped:  \(summary.dropped)")
        }
        if let error = summary.error {
            printError("error: \(error) (\(summary.frames > 0 ? "what was recorded before it is kept" : "nothing was recorded, and nothing is kept"))")
        } else if summary.frames == 0 {
            printError("warning: no picture was recorded, so nothing is kept")
        }
    }
}

/// The live status line on a terminal.
struct ProgressLine {
    let enabled: Bool

    func show(_ progress: RecordingProgress, duration: Double?) {
        guard enabled else { return }
        let total = duration.map { String(printf: " / %.0f", $0) } ?? ""
        let megabytes = Double(progress.bytes) / 1_000_000
        let line = "\r● recording \(String(printf: "%.1f", progress.elapsed))\(total) s · \(progress.frames) frames · "
            + "\(progress.dropped) dropped · \(String(printf: "%.1f", megabytes)) MB  "
        StandardStreams.writeError(line)
    }

    func finish() {
        if enabled { StandardStreams.writeError("\r\u{1b}[K") }
    }
}
