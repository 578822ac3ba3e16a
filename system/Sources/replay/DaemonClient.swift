import ArgumentParser
import FoundationEssentials
import ReplayIPC
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Finds replayd, starting it when nobody answers on its socket.
enum DaemonClient {
    /// Daemons this process started; kept so they can be reaped if they exit while we run.
    static let daemons = Mutex<[ChildProcess]>([])

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads past replayd's notes that a person must choose first, saying each: the desktop's
    /// dialog is asking (Wayland), or the next click picks the window (X11). Returns the
    /// reply that follows. `keeping` words the click for a clip buffer.
    static func nextAfterChoices(_ channel: MessageChannel, area: CaptureArea?, keeping: Bool = false) throws -> DaemonEvent {
        let window = if case .pickWindow = area { true } else { false }
        while true {
            let reply = try next(channel).message
            if case .waitingForScreenChoice(let seconds) = reply {
                printError("The desktop is asking which \(window ? "window" : "screen") to share: answer its dialog "
                    + "(replayd waits up to \(seconds) s).")
            } else if case .waitingForWindowPick(let seconds) = reply {
                printError("Click the window to \(keeping ? "keep" : "record") (replayd waits up to \(seconds) s).")
            } else {
                return reply
            }
        }
    }

    /// Connects to the daemon at `socket`, first starting one if none is listening there.
    static func connect(socket: String?, environment: [String: String] = [:], display: String? = nil) throws -> MessageChannel {
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        // $OPENREPLAYKIT_SOCKET names the daemon of a virtual desktop (replay-demo-scene
        // --desktop): every command reaches that one, never a second on the default socket.
        let named = socket ?? merged[ReplayPaths.socketVariable].flatMap { $0.isEmpty ? nil : $0 }
        let path = named ?? ReplayPaths.defaultSocket(environment: merged).path
        // The person cannot remove another user's folder: say whose it is, how it goes, and where replayd is instead.
        if named == nil, let squat = ReplayPaths.squat(of: ReplayPaths.preferredRuntimeDirectory(environment: merged)) {
            printError("replay: \(squat); using \(URL(fileURLWithPath: path).deletingLastPathComponent().path) instead")
        }
        // Nobody listening (a SystemError) starts a daemon; one that answers but does not
        // welcome us (a HandshakeError: another protocol version, ...) is reported as it is.
        do { return try MessageChannel.connect(path: path, client: "replay") } catch is SystemError {}
        // No daemon of this display's own: the session's (systemd's replayd.socket), if it listens.
        let session = ReplayPaths.sessionSocket(environment: merged).path
        if named == nil, session != path {
            do { return try MessageChannel.connect(path: session, client: "replay") } catch is SystemError {}
        }
        try launchDaemon(socket: path, environment: merged, display: display)
        let deadline = Date().addingTimeInterval(10)
        var lastError: (any Error)?
        while Date() < deadline {
            do { return try MessageChannel.connect(path: path, client: "replay") } catch let error as SystemError { lastError = error }
            Threads.sleep(seconds: 0.05)
        }
        throw Failure(description: "replayd did not start listening on \(path): \(lastError.map { "\($0)" } ?? "timed out")")
    }

    /// Starts replayd in its own session so that Ctrl-C in this terminal does not reach it;
    /// it logs to replayd.log beside its socket and exits after five idle minutes.
    private static func launchDaemon(socket: String, environment: [String: String], display: String?) throws {
        let directory = URL(fileURLWithPath: socket).deletingLastPathComponent()
        try ReplayPaths.makePrivateDirectory(directory)
        let logPath = directory.appendingPathComponent("replayd.log").path
        // Appended to, never truncated: the log of a daemon that went before (its crash, say) stays.
        let fd = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(description: "cannot write \(logPath): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let executable = ReplayPaths.siblingExecutable("replayd").path
        var arguments = ["--socket", socket, "--detach", "--idle-exit", "300"]
        if let display { arguments += ["--display", display] }
        do {
            let daemon = try ChildProcess(path: executable, arguments: arguments, environment: environment,
                                          stdout: .descriptor(fd), stderr: .descriptor(fd))
            daemons.withLock { $0.append(daemon) }
        } catch {
            throw Failure(description: "cannot start replayd (\(executable)): \(error)")
        }
    }

    /// Reads the next event, turning a closed connection into a clear error.
    static func next(_ channel: MessageChannel) throws -> (message: DaemonEvent, body: [UInt8]) {
        guard let event = try channel.receive(DaemonEvent.self) else {
            throw Failure(description: "replayd closed the connection")
        }
        if case .error(let code, let message) = event.message {
            throw Failure(description: code == .malformedRequest ? "replayd refused the request: \(message)" : message)
        }
        return event
    }
}

extension DaemonClient {
    /// One request, answered by the event `reply` accepts (anything else is a clear error).
    static func ask<Answer>(_ request: ClientRequest, socket: String?, _ reply: (DaemonEvent) -> Answer?) throws -> Answer {
        let channel = try connect(socket: socket)
        try channel.send(request)
        guard let answer = reply(try next(channel).message) else {
            throw Failure(description: "unexpected reply from replayd")
        }
        return answer
    }
}

/// Runs a command's body; a failure is printed as "error: …" and the command exits non-zero.
func reportingFailure(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch {
        printError("error: \(error)")
        throw ExitCode.failure
    }
}

/// Writes a line to standard error.
func printError(_ text: String) {
    StandardStreams.writeError((text + "\n"))
}

/// Whether a process has ended, as far as this machine says.
enum ProcessState {
    /// True when `pid` is gone or a zombie (killed, not yet reaped) within about a second: a
    /// connection closes a moment before the kernel finishes the process that held it.
    static func hasEnded(_ pid: Int32) -> Bool {
        for _ in 0..<20 {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let afterName = stat.lastIndex(of: ")") else { return true }
            // The state letter follows the command's name in parentheses.
            let state = stat[stat.index(after: afterName)...].trimmingSpaces().first
            if state == "Z" || state == "X" { return true }
            Threads.sleep(seconds: 0.05)
        }
        return false
    }
}
