public import Foundation
public import ReplaySystem
import ReplayIPC
public import ReplayVirtualDesktop

/// The one shared fixture for integration tests: a virtual desktop (Xvfb, PulseAudio with a
/// null sink, the demo scene) on a free display, a private replayd on its own socket and
/// store, and helpers to run the `replay` CLI against them. `stop()` ends all of it.
public final class ReplayFixture: @unchecked Sendable {
    // @unchecked: `daemon` is only replaced by the test that owns the fixture.
    public let desktop: VirtualDesktop?
    /// A headless Wayland desktop (mutter, PipeWire, the ScreenCast portal) instead of the X11 one.
    public let waylandDesktop: WaylandDesktop?
    public let directory: URL
    public let socket: String
    public let store: URL
    public private(set) var daemon: ChildProcess?

    public static let replay = VirtualDesktop.siblingExecutable("replay").path
    public static let replayd = VirtualDesktop.siblingExecutable("replayd").path
    /// The example app, which the privacy tests drive as "an app".
    public static let secretNotes = VirtualDesktop.siblingExecutable("secret-notes").path

    /// - Parameter desktop: the desktop to start, or nil for none (to test "no X server").
    /// - Parameter socketName: the socket's path inside the fixture's directory.
    public init(desktop: VirtualDesktop.Options? = VirtualDesktop.Options(), storeDirectory: URL? = nil,
                socketName: String = "replayd.sock") throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ork-test-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        socket = directory.appendingPathComponent(socketName).path
        store = storeDirectory ?? directory.appendingPathComponent("store")
        // The scene's diagnostics (its beep stream starved) belong in the tests' log.
        self.desktop = try desktop.map { options in
            var options = options
            options.verboseScene = true
            return try VirtualDesktop.start(options)
        }
        waylandDesktop = nil
    }

    /// A fixture on a headless Wayland desktop: the daemon captures through the ScreenCast
    /// portal (start it with `--capture portal`); `portalTokenFile` holds the desktop's seeded
    /// restore token, so no dialog is needed.
    /// With `dialogs`, the desktop's session bus starts the built `replay-ui` on demand, for
    /// this fixture's daemon, with the accessibility bus beside it.
    public init(wayland: WaylandDesktop.Options, dialogs: Bool = false) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ork-test-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        socket = directory.appendingPathComponent("replayd.sock").path
        store = directory.appendingPathComponent("store")
        desktop = nil
        var wayland = wayland
        if dialogs {
            // The desktop's own programs run with accessibility off; a person's dialog has it on.
            wayland.activatable["org.openreplaykit.UI"] = "/usr/bin/env -u GTK_A11Y -u NO_AT_BRIDGE "
                + "OPENREPLAYKIT_SOCKET=\(socket) \(VirtualDesktop.siblingExecutable("replay-ui").path) --gapplication-service"
        }
        do {
            let started = try WaylandDesktop.start(wayland)
            waylandDesktop = started
            try (started.restoreToken + "\n").write(to: portalTokenFile, atomically: true, encoding: .utf8)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// Where a daemon of a Wayland fixture keeps the portal's restore token (`--portal-token-file`).
    public var portalTokenFile: URL { directory.appendingPathComponent("screencast-token") }

    /// DISPLAY and PULSE_SERVER of the desktop, plus `overrides`.
    public func environment(_ overrides: [String: String] = [:]) -> [String: String] {
        var environment = desktop?.environment ?? waylandDesktop?.environment ?? [:]
        environment["XDG_RUNTIME_DIR"] = directory.path
        environment["XDG_DATA_HOME"] = directory.appendingPathComponent("data").path
        environment["XDG_STATE_HOME"] = directory.appendingPathComponent("state").path
        environment["XDG_CACHE_HOME"] = directory.appendingPathComponent("cache").path
        // Never the machine's session bus (its notification server, its portal): an X11
        // fixture has none unless a test brings one.
        if environment["DBUS_SESSION_BUS_ADDRESS"] == nil {
            environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(directory.path)/no-session-bus"
        }
        for (key, value) in overrides { environment[key] = value }
        return environment
    }

    /// Starts replayd on the fixture's socket and store, plus `arguments`, and waits until it answers.
    /// - Parameter openFiles: its open-file limit, soft and hard (through prlimit, which execs it).
    /// - Parameter executable: another replayd (a copy beside another `replay-capture`).
    public func startDaemon(_ arguments: [String] = [], environment overrides: [String: String] = [:], openFiles: Int? = nil,
                            executable: String = ReplayFixture.replayd) throws {
        let log = open(directory.appendingPathComponent("replayd.log").path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        defer { close(log) }
        // On an X11 fixture the X11 backend, whatever desktop the machine running the tests has.
        let capture = waylandDesktop == nil && !arguments.contains("--capture") ? ["--capture", "x11"] : []
        let command = ["--socket", socket, "--store", store.path, "--log-level", "debug"] + capture + arguments
        let daemon = try ChildProcess(
            path: openFiles == nil ? executable : "/usr/bin/prlimit",
            arguments: openFiles.map { ["--nofile=\($0):\($0)", "--", executable] + command } ?? command,
            environment: ChildProcess.environment(adding: environment(overrides)), stdout: .descriptor(log), stderr: .descriptor(log))
        self.daemon = daemon
        // Ready means accepting: a socket file can be left over by a daemon that was killed.
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if UnixSocket.acceptsConnections(path: socket) { return }
            guard daemon.isRunning else { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw VirtualDesktop.StartError(description: "replayd did not start; its log:\n\(daemonLog)")
    }

    public var daemonLog: String {
        (try? String(contentsOf: directory.appendingPathComponent("replayd.log"), encoding: .utf8)) ?? ""
    }

    /// Runs `replay ARGUMENTS --socket SOCKET` to completion.
    public func replay(_ arguments: [String], environment overrides: [String: String] = [:], timeout: Double = 120) throws -> CommandResult {
        try Command.run(Self.replay, arguments + ["--socket", socket], environment: environment(overrides), timeout: timeout)
    }

    /// Starts `replay ARGUMENTS --socket SOCKET` in the background.
    public func startReplay(_ arguments: [String], environment overrides: [String: String] = [:]) throws -> RunningCommand {
        try Command.start(Self.replay, arguments + ["--socket", socket], environment: environment(overrides))
    }

    /// Starts `replay consent-agent OPTIONS` on its terminal-less output and returns once replayd
    /// has registered it (its log says so), so apps' requests reach it. Without `--json`, what it
    /// prints goes to its standard error.
    public func startConsentAgent(_ options: [String] = [], environment overrides: [String: String] = [:]) throws -> RunningCommand {
        let registrations = { self.daemonLog.ranges(of: "consent agent registered").count }
        let before = registrations()
        let agent = try startReplay(["consent-agent"] + options, environment: overrides)
        guard poll(timeout: 20, every: 0.05, { registrations() > before ? true : nil }) != nil else {
            agent.process.terminate()
            throw MediaProbe.Failure(description: "replayd did not register the consent agent: \(agent.errorsSoFar)\n\(daemonLog.suffix(2000))")
        }
        return agent
    }

    /// Starts the example app (`secret-notes`) on the desktop, talking to this fixture's daemon.
    /// With `user`, it runs as that user (through runuser), as an app of somebody else would.
    public func startApp(_ arguments: [String], user: String? = nil) throws -> RunningCommand {
        try start(Self.secretNotes, arguments + ["--socket", socket], user: user)
    }

    /// Starts any program on the desktop, optionally as another user.
    public func start(_ path: String, _ arguments: [String], user: String? = nil) throws -> RunningCommand {
        guard let user else { return try Command.start(path, arguments, environment: environment()) }
        let variables = environment().map { "\($0.key)=\($0.value)" }.sorted()
        return try Command.start("/usr/sbin/runuser", ["-u", user, "--", "/usr/bin/env"] + variables + [path] + arguments)
    }

    /// Runs any program to completion, optionally as another user.
    public func run(_ path: String, _ arguments: [String], user: String? = nil, timeout: Double = 60) throws -> CommandResult {
        try start(path, arguments, user: user).finish(timeout: timeout)
    }

    /// The movie files in the store.
    public func storedMovies() -> [URL] {
        ((try? FileManager.default.contentsOfDirectory(at: store, includingPropertiesForKeys: nil)) ?? [])
            .filter { $0.pathExtension == "mp4" }
    }

    public func file(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Stops the daemon and the desktop and removes every file the fixture made.
    public func stop() {
        daemon?.terminate(grace: 10)
        desktop?.stop()
        waylandDesktop?.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
