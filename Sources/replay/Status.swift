import ArgumentParser
import Foundation
import ReplayIPC

extension Replay {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the daemon's process, mode, store, display, capture backend and running recordings.")

        @OptionGroup var daemon: DaemonOptions

        @Flag(help: "Print one JSON object: pid, mode (user or system), store, display, activeRecordings, pagesURL, capture.")
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
                if let capture = status.capture { print("capture: \(Sources.describe(capture))") }
                print(status.activeRecordings.isEmpty ? "no recording running" : "recording: \(status.activeRecordings.joined(separator: ", "))")
            }
        }
    }
}

extension Replay {
    struct Sources: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show how the screen is captured, and forget the screen the desktop's dialog chose.",
            discussion: """
                On Wayland the desktop asks which screen to share, once: replayd keeps that choice \
                (the ScreenCast portal's restore token) in its private state, so later recordings need \
                no dialog. --forget drops it: the next recording asks again.
                """)

        @OptionGroup var daemon: DaemonOptions

        @Flag(help: "Forget the screen chosen in the desktop's dialog; the next capture asks again.")
        var forget = false

        @Flag(help: "Print one JSON object: backend, reason, remembersScreenChoice.")
        var json = false

        func run() throws {
            try reportingFailure {
                if forget {
                    _ = try DaemonClient.ask(.forgetScreenChoice, socket: daemon.socket) {
                        if case .screenChoiceForgotten = $0 { true } else { nil }
                    }
                }
                let status = try DaemonClient.ask(.status, socket: daemon.socket) {
                    if case .status(let status) = $0 { status } else { nil }
                }
                guard let capture = status.capture else {
                    throw DaemonClient.Failure(description: "replayd did not say how it captures (only the person's own replay is told)")
                }
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys]
                    print(String(decoding: try encoder.encode(capture), as: UTF8.self))
                } else {
                    print("capture: \(Self.describe(capture))")
                }
            }
        }

        static func describe(_ capture: CaptureBackendInfo) -> String {
            let name = capture.backend == "portal" ? "the ScreenCast portal and PipeWire" : capture.backend
            let choice = switch capture.remembersScreenChoice {
            case true?: "; the screen chosen in the desktop's dialog is remembered (replay sources --forget to be asked again)"
            case false?: "; no screen chosen yet: the desktop will ask"
            case nil: ""
            }
            return "\(name) (\(capture.reason))\(choice)"
        }
    }
}
