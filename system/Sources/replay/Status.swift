import ArgumentParser
import FoundationEssentials
import ReplayIPC

extension Replay {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the daemon's process, mode, store, display, capture backend and running recordings.")

        @OptionGroup var daemon: DaemonOptions

        @Flag(help: "Print one JSON object: version, pid, mode (user or system), store, display, activeRecordings, pagesURL, capture, pausedRecordings, indicator.")
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
                let version = status.version.map { ", version \($0)" } ?? ""
                print("replayd pid \(status.pid) (\(status.mode.rawValue) mode), display \(status.display ?? "(none)")\(version)")
                if let store = status.store { print("store: \(store)") }
                if let pages = status.pagesURL { print("pages: \(pages)") }
                if let capture = status.capture { print("capture: \(Sources.describe(capture))") }
                print(status.activeRecordings.isEmpty ? "no recording running" : "recording: \(status.activeRecordings.joined(separator: ", "))")
                if let paused = status.pausedRecordings, !paused.isEmpty { print("paused: \(paused.joined(separator: ", "))") }
                if let indicator = status.indicator { print("indicator: \(Self.describe(indicator))") }
            }
        }
    }
}

extension Replay.Status {
    /// "desktop notifications", or that nobody is told, and why.
    static func describe(_ indicator: IndicatorStatus) -> String {
        switch indicator.kind {
        case .notifications: "desktop notifications announce every capture"
        case .tray: "an icon in the desktop's tray shows every capture, with Stop and Pause"
        case .none: "none, \(IndicatorStatus.nobodyIsTold)" + (indicator.reason.map { " (\($0))" } ?? "")
        }
    }
}

extension Replay {
    struct Sources: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List what can be recorded: monitors, windows and audio devices; how the screen is captured.",
            discussion: """
                `replay record --monitor NAME`, `--window ID` and `--audio-device`/`--mic-device NAME` \
                take the names and ids shown here. On Wayland the desktop's dialog chooses the screen, \
                once: replayd keeps that choice (the ScreenCast portal's restore token) in its private \
                state, so later recordings need no dialog; --forget drops it and the next recording asks again.
                """)

        @OptionGroup var daemon: DaemonOptions

        @Flag(help: "Forget the screen chosen in the desktop's dialog; the next capture asks again.")
        var forget = false

        @Flag(help: "Print one JSON object: capture (backend, reason, remembersScreenChoice), monitors, windows, audioOutputs, audioInputs, notes.")
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
                let sources = try DaemonClient.ask(.listSources, socket: daemon.socket) {
                    if case .sources(let sources) = $0 { sources } else { nil }
                }
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys]
                    print(String(decoding: try encoder.encode(Listing(capture: capture, sources: sources)), as: UTF8.self))
                    return
                }
                print("capture: \(Self.describe(capture))")
                print(Self.table(sources))
            }
        }

        /// `--json`'s object.
        private struct Listing: Encodable {
            let capture: CaptureBackendInfo
            let sources: CaptureSources

            func encode(to encoder: any Encoder) throws {
                try sources.encode(to: encoder)
                var container = encoder.container(keyedBy: Key.self)
                try container.encode(capture, forKey: .capture)
            }

            private enum Key: CodingKey { case capture }
        }

        static func table(_ sources: CaptureSources) -> String {
            var lines: [String] = []
            let marked = { (isDefault: Bool) in isDefault ? " (default)" : "" }
            if !sources.monitors.isEmpty {
                lines.append("monitors (--monitor NAME):")
                lines += sources.monitors.map {
                    "  \($0.name)  \($0.width)x\($0.height)+\($0.x)+\($0.y)\($0.primary ? " (primary)" : "")"
                }
            }
            if !sources.windows.isEmpty {
                lines.append("windows, bottom to top (--window ID, or --window pick to click one):")
                lines += sources.windows.map { window in
                    let id = "0x" + String(window.id, radix: 16)
                    // A window's title and class are its app's to choose: shown, never obeyed.
                    let app = window.application.isEmpty ? "" : " [\(VisibleText.of(window.application))]"
                    let title = window.title.isEmpty ? "(untitled)" : VisibleText.of(window.title)
                    return "  \(id)  \(window.width)x\(window.height)+\(window.x)+\(window.y)  \(title)\(app)"
                }
            }
            if !sources.audioOutputs.isEmpty {
                lines.append("audio outputs, recorded as app audio (--audio-device NAME):")
                lines += sources.audioOutputs.map { "  \($0.name)  \($0.description)\(marked($0.isDefault))" }
            }
            if !sources.audioInputs.isEmpty {
                lines.append("audio inputs (--mic-device NAME):")
                lines += sources.audioInputs.map { "  \($0.name)  \($0.description)\(marked($0.isDefault))" }
            }
            lines += sources.notes.map { "note: \($0)" }
            return lines.joined(separator: "\n")
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
