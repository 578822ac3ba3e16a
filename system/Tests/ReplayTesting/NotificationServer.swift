public import Foundation
import ReplaySystem
import ReplayIPC
#if canImport(Glibc)
import Glibc
#endif

/// A real desktop notification server for tests: dunst on the test's X display, on a private
/// session bus of its own. Every notification it shows is logged (a dunst rule runs a script
/// for each, a replaced one too), `invokeAction` does what a click does, through `dunstctl`,
/// and `invokeAction(named:)` picks a button from dunst's context menu.
public final class NotificationServer: @unchecked Sendable {
    // @unchecked: the processes are set up in init and only stopped afterwards.
    public let directory: URL
    /// `unix:path=…` of the private bus: give it to replayd as DBUS_SESSION_BUS_ADDRESS.
    public let busAddress: String
    private var processes: [ChildProcess] = []

    /// One notification as dunst showed it.
    public struct Shown: Sendable, Equatable {
        public let id: Int
        public let summary: String
        public let body: String
    }

    public init(display: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ork-test-notifications-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        busAddress = "unix:path=\(directory.path)/bus"
        let script = directory.appendingPathComponent("log.sh")
        try """
            #!/bin/sh
            printf '%s\\t%s\\t%s\\n' "$DUNST_ID" "$2" "$3" >> '\(directory.path)/shown.log'
            """.write(to: script, atomically: true, encoding: .utf8)
        chmod(script.path, 0o755)
        // dunst's context menu runs its `dmenu` with every action on screen on stdin, a line each
        // ("#Resume (Recording paused) [3,resume]"), and invokes the line it prints: a button,
        // never the click (the "default" key), which may carry the same label.
        let menu = directory.appendingPathComponent("menu.sh")
        try """
            #!/bin/sh
            line=$(grep -v ',default]$' | grep -m1 -F -- "$(cat '\(directory.path)/wanted')")
            printf '%s\\n' "$line" > '\(directory.path)/chosen.tmp'
            mv '\(directory.path)/chosen.tmp' '\(directory.path)/chosen'
            printf '%s\\n' "$line"
            """.write(to: menu, atomically: true, encoding: .utf8)
        chmod(menu.path, 0o755)
        let configuration = directory.appendingPathComponent("dunstrc")
        try """
            [global]
                timeout = 0
                dmenu = \(menu.path)
            [log]
                appname = "*"
                script = \(script.path)
            """.write(to: configuration, atomically: true, encoding: .utf8)
        do {
            processes.append(try ChildProcess(path: "/usr/bin/dbus-daemon", arguments: ["--session", "--address=\(busAddress)", "--nofork"],
                                              environment: ChildProcess.environment(adding: [:]), stdout: .null, stderr: .null))
            guard poll(timeout: 5, every: 0.02, { UnixSocket.acceptsConnections(path: "\(directory.path)/bus") ? true : nil }) != nil else {
                throw MediaProbe.Failure(description: "the notification server's bus did not start")
            }
            processes.append(try ChildProcess(
                path: "/usr/bin/dunst", arguments: ["-conf", configuration.path],
                environment: ChildProcess.environment(adding: ["DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": busAddress]),
                stdout: .null, stderr: .null))
            // Ready once it owns the name on its bus.
            guard poll(timeout: 10, every: 0.1, { (try? self.dunstctl(["count", "displayed"]))?.status == 0 ? true : nil }) != nil else {
                throw MediaProbe.Failure(description: "dunst did not start on the test's display")
            }
        } catch {
            stop()
            throw error
        }
    }

    /// What dunst has shown, oldest first.
    public var shown: [Shown] {
        let text = (try? String(contentsOf: directory.appendingPathComponent("shown.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 3, let id = Int(fields[0]) else { return nil }
            return Shown(id: id, summary: String(fields[1]), body: String(fields[2]))
        }
    }

    /// How many notifications are on screen now.
    public func displayed() throws -> Int { Int(try dunstctl(["count", "displayed"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1 }

    /// A click on the newest notification on screen: its default action.
    public func invokeAction() throws -> CommandResult { try dunstctl(["action", "0"]) }

    /// Chooses the button (not the click) labelled `label` of the notification whose summary is `summary` from
    /// dunst's context menu, as a person would; the menu's line that was chosen, or nil when
    /// no such button is on screen.
    public func invokeAction(named label: String, of summary: String) throws -> String? {
        let chosen = directory.appendingPathComponent("chosen")
        try? FileManager.default.removeItem(at: chosen)
        try "#\(label) (\(summary)) [".write(to: directory.appendingPathComponent("wanted"), atomically: true, encoding: .utf8)
        let opened = try dunstctl(["context"])
        guard opened.status == 0 else { throw MediaProbe.Failure(description: "dunstctl context: \(opened)") }
        let line = poll(timeout: 10, every: 0.05) { try? String(contentsOf: chosen, encoding: .utf8) }
        guard let line else { throw MediaProbe.Failure(description: "dunst's context menu did not open") }
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : trimmed
    }

    @discardableResult
    private func dunstctl(_ arguments: [String]) throws -> CommandResult {
        try Command.run("/usr/bin/dunstctl", arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": busAddress], timeout: 10)
    }

    public func stop() {
        for process in processes.reversed() { process.terminate(grace: 2) }
        processes = []
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
