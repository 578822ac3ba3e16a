import Dispatch
import FoundationEssentials
import ReplaySystem
import ReplayVirtualDesktop
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `replay-demo-scene --desktop [--] COMMAND [ARGUMENT...]`: runs a command in a virtual
/// desktop of its own and stops the desktop when the command is done. This is how
/// `replay record` brings its own desktop on a machine without one, so that replay itself
/// need not link Xvfb, PulseAudio and the demo scene.
///
/// The desktop is a 1920x1080 Xvfb display, a PulseAudio server and the demo scene. The
/// command gets their DISPLAY and PULSE_SERVER, `$OPENREPLAYKIT_SOCKET` (a daemon socket in
/// the desktop's private directory) and `$OPENREPLAYKIT_VIRTUAL_DESKTOP` (that directory);
/// it shares our standard input, output and error. SIGINT, SIGTERM and SIGHUP are passed on
/// to it (it runs in a session of its own, so Ctrl-C reaches only us); one that comes while
/// the desktop starts stops the desktop instead of running the command. The exit status is
/// the command's (128 + the signal when one ended it); 1 when the desktop cannot start, 127
/// when the command cannot be run.
///
/// `--wayland-desktop` runs it in a headless Wayland desktop instead (mutter, PipeWire, the
/// ScreenCast portal, pipewire-pulse; a moving 1920x1080 scene): the command gets its
/// WAYLAND_DISPLAY, XDG_RUNTIME_DIR, session bus and PULSE_SERVER, and in
/// `$OPENREPLAYKIT_SCREENCAST_TOKEN` the restore token that opens a screen cast of its
/// monitor without a dialog (what `bench/run --wayland` measures on). `--sway-desktop` is the
/// same with sway and xdg-desktop-portal-wlr (no token: its chooser picks the one output).
enum DesktopCommand {
    enum Kind {
        case x11
        case wayland(WaylandDesktop.Compositor)
    }

    /// Either desktop, as the command sees it.
    private struct Started {
        let directory: URL
        let environment: [String: String]
        let stop: () -> Void
    }

    static func run(_ command: [String], on kind: Kind = .x11) -> Int32 {
        guard let name = command.first else {
            printError("usage: replay-demo-scene --desktop|--wayland-desktop|--sway-desktop [--] COMMAND [ARGUMENT...]")
            return 2
        }
        let forwarder = Forwarder()
        let sources = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { forwarder.deliver(number) }
            source.resume()
            return source
        }
        defer { sources.forEach { $0.cancel() } }

        let desktop: Started
        do {
            switch kind {
            case .x11:
                let x11 = try VirtualDesktop.start()
                desktop = Started(directory: x11.directory, environment: x11.environment, stop: x11.stop)
            case .wayland(let compositor):
                let wayland = try WaylandDesktop.start(WaylandDesktop.Options(compositor: compositor, width: 1920, height: 1080, audio: true))
                desktop = Started(directory: wayland.directory,
                                  environment: wayland.environment.merging(["OPENREPLAYKIT_SCREENCAST_TOKEN": wayland.restoreToken]) { $1 },
                                  stop: wayland.stop)
            }
        } catch {
            printError("error: cannot start the virtual desktop: \(error)")
            return 1
        }
        defer { desktop.stop() }

        let path = executablePath(name)
        var environment = ChildProcess.environment(adding: desktop.environment.merging([
            ReplayPaths.socketVariable: desktop.directory.appendingPathComponent("replayd.sock").path,
            ReplayPaths.virtualDesktopVariable: desktop.directory.path,
        ]) { _, new in new })
        // On the Wayland desktop nothing may fall back to an X display of the machine's.
        if case .wayland = kind { environment["DISPLAY"] = nil }
        let started = forwarder.start {
            try ChildProcess(path: path, arguments: Array(command.dropFirst()), environment: environment,
                             stdin: .descriptor(0), stdout: .descriptor(1), stderr: .descriptor(2))
        }
        switch started {
        case .signalled(let number):
            return 128 + number
        case .failed(let error):
            printError("error: cannot run \(name): \(error)")
            return 127
        case .running(let child):
            let status = child.wait()
            forwarder.finish()
            return status
        }
    }

    /// `name` as given when it names a path, else the first executable of that name on $PATH.
    private static func executablePath(_ name: String) -> String {
        guard !name.contains("/") else { return name }
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
        for directory in directories {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return name
    }

    private static func printError(_ text: String) {
        StandardStreams.writeError((text + "\n"))
    }
}

/// Passes signals on to the command once it runs; remembers the first that comes before.
private final class Forwarder: Sendable {
    enum Started {
        case running(ChildProcess)
        case signalled(Int32)
        case failed(any Error)
    }

    private enum State {
        case starting(signalled: Int32?)
        case running(ChildProcess)
        case finished
    }

    private let state = Mutex<State>(.starting(signalled: nil))

    func deliver(_ number: Int32) {
        state.withLock { state in
            switch state {
            case .starting(nil): state = .starting(signalled: number)
            case .running(let child): child.signal(number)
            case .starting, .finished: break
            }
        }
    }

    /// Runs `spawn` unless a signal came first; a signal cannot slip in between.
    func start(_ spawn: () throws -> ChildProcess) -> Started {
        state.withLock { state in
            if case .starting(let number?) = state {
                state = .finished
                return .signalled(number)
            }
            do {
                let child = try spawn()
                state = .running(child)
                return .running(child)
            } catch {
                state = .finished
                return .failed(error)
            }
        }
    }

    func finish() {
        state.withLock { $0 = .finished }
    }
}
