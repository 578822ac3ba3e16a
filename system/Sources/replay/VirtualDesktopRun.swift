import ArgumentParser
import FoundationEssentials
import ReplayIPC
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// A command that needs a desktop, run where there is none (no DISPLAY, no WAYLAND_DISPLAY):
/// `replay record` and `replay broadcast start` bring their own, as the README promises.
enum VirtualDesktopRun {
    /// No desktop here: bring our own. This same command runs again under
    /// `replay-demo-scene --desktop`, which starts Xvfb, PulseAudio and the demo scene,
    /// runs it there with their DISPLAY, PULSE_SERVER and a daemon socket of the desktop's
    /// own, passes on its output, Ctrl-C and exit status, and stops them all afterwards.
    /// The desktop lives in that process, so replay itself links none of it.
    static func execInOwnDesktop() throws -> Never {
        // The command runs again in there, and knows the desktop is its own (not one a script
        // started it in, where it must behave as anywhere else).
        setenv(broughtVariable, "1", 1)
        let launcher = ReplayPaths.siblingExecutable("replay-demo-scene").path
        let arguments = [launcher, "--desktop", "--", ReplayPaths.runningExecutable().path] + CommandLine.arguments.dropFirst()
        let argv = arguments.map { strdup($0) } + [nil]
        execv(launcher, argv)
        let reason = String(cString: strerror(errno))
        printError("error: cannot start the virtual desktop: cannot run \(launcher): \(reason)")
        throw ExitCode.failure
    }

    /// The daemon of a virtual desktop is ours alone: stop it with the desktop.
    static func stopPrivateDaemon(_ channel: MessageChannel, socket: String) {
        try? channel.send(ClientRequest.status)
        guard let event = try? channel.receive(DaemonEvent.self), case .status(let status) = event.message else { return }
        kill(status.pid, SIGTERM)
        // It removes its socket once its recordings are closed.
        let deadline = Date().addingTimeInterval(10)
        while FileManager.default.fileExists(atPath: socket) && Date() < deadline { Threads.sleep(seconds: 0.05) }
    }

    /// Whether this process runs inside such a desktop (its daemon is ours alone).
    static var isPrivate: Bool { !(ProcessInfo.processInfo.environment[ReplayPaths.virtualDesktopVariable] ?? "").isEmpty }

    /// Whether this command brought the desktop it runs in itself (`execInOwnDesktop`).
    static var broughtItsOwn: Bool { isPrivate && ProcessInfo.processInfo.environment[broughtVariable] == "1" }

    private static let broughtVariable = "OPENREPLAYKIT_OWN_DESKTOP"

    /// Neither an X display nor a Wayland one is named.
    static var noDesktop: Bool {
        let environment = ProcessInfo.processInfo.environment
        return (environment["DISPLAY"] ?? "").isEmpty && (environment["WAYLAND_DISPLAY"] ?? "").isEmpty
    }
}
