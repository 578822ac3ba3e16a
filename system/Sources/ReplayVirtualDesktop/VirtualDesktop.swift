public import FoundationEssentials
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// A desktop of our own for machines without one (servers, CI) and for tests: an Xvfb
/// display, a PulseAudio server with a null sink (and a silent null microphone), and
/// optionally the demo scene. Everything runs in a private temporary directory and is
/// stopped by `stop()`.
public final class VirtualDesktop: @unchecked Sendable {
    // @unchecked: the process list is only changed by start (before sharing) and stop (under `lock`).
    public struct Options: Sendable {
        public var width: Int
        public var height: Int
        public var audio: Bool
        public var demoScene: Bool
        /// A display whose size can change (`xrandr -s WxH`): Xephyr nested in an Xvfb, since
        /// Debian's Xvfb cannot change its size.
        public var resizable: Bool
        /// The demo scene also says when its beep stream starved (`replay-demo-scene --verbose`):
        /// for the tests' logs, not a person's terminal.
        public var verboseScene: Bool

        public init(width: Int = 1920, height: Int = 1080, audio: Bool = true, demoScene: Bool = true, resizable: Bool = false,
                    verboseScene: Bool = false) {
            self.width = width
            self.height = height
            self.audio = audio
            self.demoScene = demoScene
            self.resizable = resizable
            self.verboseScene = verboseScene
        }
    }

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// `:N`, the display Xvfb chose.
    public let display: String
    /// `unix:PATH` of the audio server, when one was started.
    public let pulseServer: String?
    public let directory: URL
    private var processes: [(component: Component, process: ChildProcess)] = []
    private let lock = ConditionLock()

    /// The servers and clients a desktop runs.
    public enum Component: Sendable {
        case display
        case audioServer
        case demoScene
    }

    /// The environment a client of this desktop needs: DISPLAY and PULSE_SERVER.
    public var environment: [String: String] {
        var environment = ["DISPLAY": display]
        if let pulseServer { environment["PULSE_SERVER"] = pulseServer }
        return environment
    }

    public static func start(_ options: Options = Options(), demoSceneExecutable: URL? = nil) throws -> VirtualDesktop {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("openreplaykit-desktop-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var processes: [(component: Component, process: ChildProcess)] = []
        do {
            var (server, display) = try startXServer("/usr/bin/Xvfb", [
                "-screen", "0", "\(options.width)x\(options.height)x24", "+extension", "RANDR"])
            processes.append((.display, server))
            if options.resizable {
                (server, display) = try startXServer("/usr/bin/Xephyr", [
                    "-screen", "\(options.width)x\(options.height)", "-resizeable"], environment: ["DISPLAY": display])
                processes.append((.display, server))
            }
            var pulseServer: String?
            if options.audio {
                let (pulse, server) = try startPulseAudio(in: directory)
                processes.append((.audioServer, pulse))
                pulseServer = server
            }
            let desktop = VirtualDesktop(display: display, pulseServer: pulseServer, directory: directory, processes: processes)
            if options.demoScene {
                let executable = demoSceneExecutable ?? siblingExecutable("replay-demo-scene")
                let scene = try launch(executable.path, options.verboseScene ? ["--verbose"] : [], environment: desktop.environment,
                                       stderr: .descriptor(2))
                desktop.processes.append((.demoScene, scene))
                // The scene's first flash comes once its audio has settled, 1-2 s from now.
                Threads.sleep(seconds: 1)
                guard scene.isRunning else {
                    desktop.stop()
                    throw StartError(description: "the demo scene exited at start")
                }
            }
            return desktop
        } catch {
            for entry in processes.reversed() { entry.process.terminate() }
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    private init(display: String, pulseServer: String?, directory: URL,
                 processes: [(component: Component, process: ChildProcess)]) {
        self.display = display
        self.pulseServer = pulseServer
        self.directory = directory
        self.processes = processes
    }

    /// Stops everything this desktop started, newest first. Safe to call more than once.
    public func stop() {
        let running = lock.withLock {
            let running = processes
            processes = []
            return running
        }
        for entry in running.reversed() { entry.process.terminate() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Kills one part at once, as a crash would (for fault tests); the rest keeps running.
    public func crash(_ component: Component) {
        let victims = lock.withLock { processes.filter { $0.component == component }.map(\.process) }
        for process in victims {
            process.signal(SIGKILL)
            process.wait()
        }
    }

    deinit { stop() }

    /// An executable installed beside the running one: `ReplayPaths.siblingExecutable(_:)`.
    public static func siblingExecutable(_ name: String) -> URL { ReplayPaths.siblingExecutable(name) }

    /// Starts an X server on a free display: with -displayfd it picks one and writes its
    /// number once it accepts clients.
    private static func startXServer(_ path: String, _ arguments: [String],
                                     environment: [String: String] = [:]) throws -> (ChildProcess, String) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw StartError(description: "pipe: \(String(cString: strerror(errno)))") }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        defer { close(ends[0]) }
        let server: ChildProcess
        do {
            server = try launch(path, ["-displayfd", "1", "-nolisten", "tcp", "-noreset"] + arguments,
                                environment: environment, stdout: .descriptor(ends[1]))
        } catch {
            close(ends[1])
            throw error
        }
        close(ends[1])
        guard let number = readLine(from: ends[0], timeout: 10), Int(number) != nil else {
            server.terminate()
            throw StartError(description: "\(path) did not start (is its package, xvfb or xserver-xephyr, installed?)")
        }
        return (server, ":\(number)")
    }

    private static func startPulseAudio(in directory: URL) throws -> (ChildProcess, String) {
        let runtime = directory.appendingPathComponent("pulse")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        let socket = runtime.appendingPathComponent("native").path
        let environment = ["HOME": directory.path, "XDG_RUNTIME_DIR": runtime.path, "XDG_CONFIG_HOME": directory.path]
        let pulse = try launch("/usr/bin/pulseaudio", [
            "--daemonize=no", "--system=false", "--exit-idle-time=-1", "--use-pid-file=no", "--disallow-exit",
            "-n", "--disable-shm=yes", "--log-target=stderr", "--log-level=error",
            "--load=module-native-protocol-unix socket=\(socket) auth-anonymous=1",
            "--load=module-null-sink sink_name=replay_speakers sink_properties=device.description=Speakers norewinds=1",
            "--load=module-null-source source_name=replay_microphone",
            "--load=module-default-device-restore",
        ], environment: environment)
        let server = "unix:\(socket)"
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if !pulse.isRunning { break }
            if FileManager.default.fileExists(atPath: socket), pactl(["info"], server: server) {
                _ = pactl(["set-default-sink", "replay_speakers"], server: server)
                _ = pactl(["set-default-source", "replay_microphone"], server: server)
                return (pulse, server)
            }
            Threads.sleep(seconds: 0.1)
        }
        pulse.terminate()
        throw StartError(description: "PulseAudio did not start (are the pulseaudio and pulseaudio-utils packages installed?)")
    }

    private static func pactl(_ arguments: [String], server: String) -> Bool {
        guard let process = try? launch("/usr/bin/pactl", ["--server=\(server)"] + arguments, environment: [:]) else {
            return false
        }
        return process.wait() == 0
    }

    static func launch(_ path: String, _ arguments: [String], environment: [String: String],
                       stdout: ChildProcess.Stream = .null, stderr: ChildProcess.Stream = .null) throws -> ChildProcess {
        do {
            return try ChildProcess(path: path, arguments: arguments,
                                    environment: ChildProcess.environment(adding: environment), stdout: stdout, stderr: stderr)
        } catch {
            throw StartError(description: "cannot run \(path): \(error)")
        }
    }

    private static func readLine(from fd: Int32, timeout: TimeInterval) -> String? {
        var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var line = ""
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            guard poll(&pollfd, 1, 100) > 0 else { continue }
            var byte: UInt8 = 0
            guard Glibc.read(fd, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return line }
            line.append(Character(UnicodeScalar(byte)))
        }
        return nil
    }
}
