import Foundation
public import ReplaySystem

/// What a finished command printed and how it exited.
public struct CommandResult: Sendable, CustomStringConvertible {
    public let status: Int32
    public let stdout: String
    public let stderr: String

    public var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }

    /// Standard output's JSON lines, decoded.
    public var jsonLines: [[String: Any]] { decodeJSONLines(stdout) }
}

func decodeJSONLines(_ text: String) -> [[String: Any]] {
    text.split(whereSeparator: \.isNewline).compactMap {
        try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
}

/// Runs programs for tests: output goes through files (no pipe to fill up), and a command
/// that overruns its time limit is killed rather than hanging the suite.
public enum Command {
    public static func run(_ path: String, _ arguments: [String], environment: [String: String] = [:],
                           timeout: Double = 120) throws -> CommandResult {
        let running = try start(path, arguments, environment: environment)
        return running.finish(timeout: timeout)
    }

    public static func start(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> RunningCommand {
        try RunningCommand(path: path, arguments: arguments, environment: environment)
    }

    /// `name` from PATH, for ffprobe and friends.
    public static func which(_ name: String) -> String {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return "/usr/bin/\(name)"
    }
}

/// A command started in the background.
public final class RunningCommand: Sendable {
    public let process: ChildProcess
    private let stdoutPath: String
    private let stderrPath: String

    init(path: String, arguments: [String], environment: [String: String]) throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("cmd-\(UUID().uuidString)").path
        stdoutPath = base + ".out"
        stderrPath = base + ".err"
        let out = open(stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let err = open(stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer {
            close(out)
            close(err)
        }
        process = try ChildProcess(path: path, arguments: arguments, environment: ChildProcess.environment(adding: environment),
                                   stdout: .descriptor(out), stderr: .descriptor(err))
    }

    /// What the command has printed on standard output so far.
    public var outputSoFar: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }

    /// What the command has printed on standard error so far.
    public var errorsSoFar: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// The JSON lines printed so far, decoded.
    public var jsonLines: [[String: Any]] { decodeJSONLines(outputSoFar) }

    /// Waits until a JSON line satisfies `matches` (or the command exits, or time runs out).
    @discardableResult
    public func waitForJSONLine(timeout: Double = 30, _ matches: ([String: Any]) -> Bool) -> [String: Any]? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = jsonLines.first(where: matches) { return line }
            if !process.isRunning { return jsonLines.first(where: matches) }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return nil
    }

    /// Waits until its standard error holds `text` (or the time runs out): what it printed
    /// there by then, or nil.
    public func waitForErrors(containing text: String, timeout: Double = 20) -> String? {
        poll(timeout: timeout, every: 0.05) { errorsSoFar.contains(text) ? errorsSoFar : nil }
    }

    /// Waits for the command (killing it after `timeout` seconds) and collects its output.
    public func finish(timeout: Double = 120) -> CommandResult {
        if process.wait(timeout: timeout) == nil { process.terminate(grace: 2) }
        let status = process.wait()
        let result = CommandResult(
            status: status,
            stdout: (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "")
        try? FileManager.default.removeItem(atPath: stdoutPath)
        try? FileManager.default.removeItem(atPath: stderrPath)
        return result
    }
}
