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
            try reportingFailure {
                let status = try DaemonClient.ask(.status, socket: daemon.socket) {
                    if case .status(let status) = $0 { status } else { nil }
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
            }
        }
    }
}
