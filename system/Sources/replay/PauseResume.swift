import ArgumentParser
import FoundationEssentials
import ReplayIPC

/// `replay pause` and `replay resume`: act on a running recording from any terminal, as the
/// person. What is captured while paused is left out of the movie, with no gap in its time.
struct Pause: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pause a running recording: nothing is recorded until `replay resume`.",
        discussion: """
            The movie leaves the paused span out: it has no gap and no frozen picture there, and \
            its sound stays in sync. Without an id, the only running recording is paused (\
            `replay status` lists them).
            """)
    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var selection: RecordingSelection
    func run() throws { try selection.send(.pauseRecording(id: selection.id), socket: daemon.socket) }
}

struct Resume: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Resume a paused recording.")
    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var selection: RecordingSelection
    func run() throws { try selection.send(.resumeRecording(id: selection.id), socket: daemon.socket) }
}

struct RecordingSelection: ParsableArguments {
    @Argument(help: "The recording's id (default: the only one running).")
    var id: String?
    @Flag(help: "Print {\"id\": …, \"state\": \"paused\"|\"recording\"} as JSON.")
    var json = false

    func send(_ request: ClientRequest, socket: String?) throws {
        try reportingFailure {
            let (id, paused) = try DaemonClient.ask(request, socket: socket) { event -> (String, Bool)? in
                switch event {
                case .recordingPaused(let id): (id, true)
                case .recordingResumed(let id): (id, false)
                default: nil
                }
            }
            if json {
                print("{\"id\":\"\(id)\",\"state\":\"\(paused ? "paused" : "recording")\"}")
            } else {
                print(paused ? "Paused \(id)." : "Resumed \(id).")
            }
        }
    }
}
