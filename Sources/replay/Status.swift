import ArgumentParser
import Foundation
import ReplayIPC

extension Replay {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the daemon's process, mode, store, display and running recordings.")

        @OptionGroup var daemon: DaemonOptions

        @Flag(help: "Print one JSON object: pid, mode (user or system), store, display, activeRecordings, pagesURL.")
        var json = false

        func run() throws {
            do {
                let channel = try DaemonClient.connect(socket: daemon.socket)
                try channel.send(ClientRequest.status)
                guard case .status(let status) = try DaemonClient.next(channel).message else {
                    throw DaemonClient.Failure(description: "unexpected reply from replayd")
                }
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys]
                    print(String(decoding: try encoder.encode(status), as: UTF8.self))
                    return
                }
                print("replayd pid \(status.pid) (\(status.mode.rawValue) mode), display \(status.display ?? "(none)")")
                if let store = status.store { print("store: \(store)") }
                if let pages = status.pagesURL { print("pages: \(pages)") }
                print(status.activeRecordings.isEmpty ? "no recording running" : "recording: \(status.activeRecordings.joined(separator: ", "))")
            } catch {
                printError("error: \(error)")
                throw ExitCode.failure
            }
        }
    }
}
