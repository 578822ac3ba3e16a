import ArgumentParser
import Foundation
import Logging
import ReplayDaemon
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

@main
struct ReplayDaemonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replayd",
        abstract: "The OpenReplayKit daemon: owns screen and audio capture and the private recording store.",
        discussion: """
            Clients (the replay CLI, apps) talk to it over a Unix socket. The replay CLI starts it \
            on demand, so running it by hand is only needed for a service manager. SIGTERM or \
            SIGINT stop it cleanly: running recordings are finished and kept.
            """)

    @Option(help: "Unix socket to listen on (default: $XDG_RUNTIME_DIR/openreplaykit/replayd-DISPLAY.sock).")
    var socket: String?

    @Option(help: "Directory of the private recording store, created with mode 0700 (default: ~/.local/share/openreplaykit/recordings).")
    var store: String?

    @Option(help: "X display to capture (default: $DISPLAY).")
    var display: String?

    @Option(help: "Exit after this many seconds with no client and no recording.")
    var idleExit: Int?

    @Option(help: "Least severe log messages to show: trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Flag(help: "Leave the caller's session and process group (used when the CLI starts the daemon).")
    var detach = false

    func validate() throws {
        if let idleExit, idleExit <= 0 { throw ValidationError("--idle-exit must be positive") }
        if Logger.Level(rawValue: logLevel) == nil { throw ValidationError("unknown --log-level '\(logLevel)'") }
    }

    func run() throws {
        if detach { _ = setsid() }
        signal(SIGPIPE, SIG_IGN)
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "replayd")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info

        let daemon: Daemon
        do {
            daemon = try Daemon(configuration: .init(
                socketPath: socket ?? ReplayPaths.defaultSocket().path,
                store: store.map { URL(fileURLWithPath: $0) } ?? ReplayPaths.defaultStore(),
                displayName: display,
                idleExit: idleExit.map { .seconds($0) }), logger: logger)
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode(1)
        }

        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { daemon.shutdown() }
            source.resume()
            sources.append(source)
        }
        daemon.run()
        withExtendedLifetime(sources) {}
    }
}
