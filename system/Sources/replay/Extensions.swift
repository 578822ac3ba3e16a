import ArgumentParser
import FoundationEssentials
import ReplayIPC

extension Replay {
    struct Extensions: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List installed upload extensions (broadcast services).",
            subcommands: [List.self], defaultSubcommand: List.self)
    }
}

extension Replay.Extensions {
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List installed upload extensions and the setup each one needs.",
            discussion: "Extensions are found through their JSON manifests in \(ExtensionFolders.sentence).")

        @OptionGroup var daemon: DaemonOptions

        @Flag(help: "Print a JSON array of extensions.")
        var json = false

        func run() throws {
            try reportingFailure {
                let list = try DaemonClient.ask(.listExtensions, socket: daemon.socket) {
                    if case .extensions(let list) = $0 { list } else { nil }
                }
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                    print(String(decoding: try encoder.encode(list), as: UTF8.self))
                    return
                }
                if list.isEmpty { print("No upload extensions are installed.") }
                for info in list {
                    let setup = info.manifest.setupFields.map { "\($0.key)\($0.required ? "" : "?")" }.joined(separator: " ")
                    print(VisibleText.of("\(info.manifest.id)  \(info.manifest.displayName)\(setup.isEmpty ? "" : "  setup: \(setup)")"))
                }
            }
        }
    }
}
