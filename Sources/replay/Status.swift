import ArgumentParser
import ReplayIPC

extension Replay {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the daemon's process, display and running recordings.")

        @OptionGroup var daemon: DaemonOptions

        func run() throws {
            do {
                let channel = try DaemonClient.connect(socket: daemon.socket)
                try channel.send(ClientRequest.status)
                guard case .status(let status) = try DaemonClient.next(channel).message else {
                    throw DaemonClient.Failure(description: "unexpected reply from replayd")
                }
                print("replayd pid \(status.pid), display \(status.display ?? "(none)")")
                print(status.activeRecordings.isEmpty ? "no recording running" : "recording: \(status.activeRecordings.joined(separator: ", "))")
            } catch {
                printError("error: \(error)")
                throw ExitCode.failure
            }
        }
    }
}
