import ArgumentParser
import CReplayd
import FoundationEssentials
import Logging
import NIOCore
import NIOPosix
import ReplayCaptureModel
import ReplayDaemon
import ReplayIPC
import ReplaySystem
import ServiceLifecycle
import UnixSignals
#if canImport(Glibc)
import Glibc
#endif

@main
struct ReplayDaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replayd",
        abstract: "The OpenReplayKit daemon: owns screen and audio capture and the private recording store.",
        discussion: """
            Clients (the replay CLI, apps) talk to it over a Unix socket. The replay CLI starts it \
            on demand, so running it by hand is only needed for a service manager. SIGTERM or \
            SIGINT stop it cleanly: running recordings are finished and kept.

            It logs to its standard error (under systemd: the journal), and so does what its upload \
            extensions write there; only a daemon that the replay CLI started has its standard \
            error in replayd.log beside its socket.

            Socket activation: started by systemd (replayd.socket) or systemd-socket-activate with \
            LISTEN_FDS=1, replayd serves the listening Unix socket it is handed instead of binding \
            its own, and leaves it in place when it exits.

            Apps must get the person's consent before they capture: a consent agent \
            ('replay consent-agent') or the loopback page it points to asks, or a policy file \
            answers on unattended machines, e.g. {"default": "ask", "apps": {"/usr/bin/obs": "allow"}}.

            With --system (as root), replayd runs as its own user 'replayd', which alone can \
            read the store; clients of every user may connect.

            Upload extensions are found in \(ExtensionFolders.sentence).
            """,
        version: ReleaseVersion.current)

    @Option(help: "Unix socket to listen on (default: $XDG_RUNTIME_DIR/openreplaykit/replayd-DISPLAY.sock).")
    var socket: String?

    @Option(help: "Directory of the private recording store, created with mode 0700 (default: ~/.local/share/openreplaykit/recordings).")
    var store: String?

    @Option(help: "X display to capture (default: $DISPLAY).")
    var display: String?

    @Option(help: "Screen capture: x11, portal (Wayland: the ScreenCast portal and PipeWire), or auto (portal on a Wayland session, else x11).")
    var capture: String = "auto"

    @Option(help: "Seconds to wait for the person to answer the desktop's screen-sharing dialog (ScreenCast portal) before a capture gives up.")
    var screenChoiceTimeout: Int = 60

    @Option(help: "File where replayd keeps the ScreenCast portal's restore token for the monitor (mode 0600), so the desktop need not ask again after a restart (default: screencast-token in $XDG_STATE_HOME/openreplaykit, or beside the system store). The window chosen for `--window pick` is kept beside it, under the same name followed by -window.")
    var portalTokenFile: String?

    @Option(help: "Exit after this many seconds with no client and no recording.")
    var idleExit: Int?

    @Option(help: "Least severe log messages to show: trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Flag(help: "Leave the caller's session and process group (used when the CLI starts the daemon).")
    var detach = false

    @Flag(help: "Run as the system daemon: start as root, drop to the 'replayd' user, store in /var/lib/openreplaykit (needs the user; scripts/install-deps creates it).")
    var system = false

    @Option(help: "The person whose replay command may read the store and answer consent (user name or uid; default: the user who starts replayd).")
    var owner: String?

    @Option(help: "JSON file with standing consent answers for unattended machines.")
    var consentPolicy: String?

    @Option(help: "Seconds an app waits for the person's answer before it counts as declined.")
    var consentTimeout: Int = 120

    @Option(help: "Seconds without focus or capture after which an app's consent lapses (ReplayKit: 8 minutes).")
    var consentIdle: Int = 480

    @Option(help: "Loopback port of the consent, preview and picker pages (0: any free port, started on first use; another port is bound at start).")
    var pagesPort: Int = 0

    @Flag(help: "Serve no consent or preview pages.")
    var noPages = false

    @Flag(help: "Announce no capture as a desktop notification (by default each recording, in-app capture and broadcast is announced, with a Stop action, on the session bus's notification server).")
    var noNotify = false

    @Flag(help: "Never start the desktop's consent dialog (replay-ui). By default, when an app asks to capture and no consent agent is running, replayd has the session bus start replay-ui, which asks the person in a window and exits once it shows nothing.")
    var noConsentDialog = false

    @Option(help: "Another directory of upload-extension manifests, searched before the others (see the list above); may be repeated.")
    var extensionsDir: [String] = []

    @Flag(help: "Check that upload extensions can be sandboxed here as documented (bubblewrap, a network of their own through pasta and /dev/net/tun, Landlock, cgroups) for the user replayd runs as (with --system: 'replayd'), say what is missing, and exit: 0 when nothing is.")
    var check = false

    @Flag(help: .hidden)
    var inspectProcesses = false

    /// `--check`: the sandbox's parts as the daemon's user finds them, one line each.
    private func checkSandbox() throws -> Never {
        if system {
            guard let user = ServiceUser(named: "replayd") else {
                throw ValidationError("--system needs the user 'replayd' (scripts/install-deps creates it)")
            }
            try user.become()
        }
        let findings = SandboxCheck.findings()
        for finding in findings { print("\(finding.kind.rawValue): \(finding.text)") }
        let problems = findings.filter { $0.kind == .problem }.count
        print(problems == 0 ? "The extensions' sandbox is as documented." : "\(problems) part(s) of the extensions' sandbox missing.")
        Glibc.exit(problems == 0 ? 0 : 1)
    }

    /// Swift's tasks run on NIO's event loops, not on dispatch's pool: on Linux, libdispatch
    /// watches its pool with a timer that wakes the process once a second, for good, from the
    /// first task that pool ran (its workqueue monitor). replayd's own queues are serial ones,
    /// which that monitor does not watch, so an idle daemon sleeps until something happens.
    /// (NIO's own `unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor`
    /// finds the runtime's hook by dlsym, which a release build, linking the runtime in, hides.)
    static func main() async {
        CReplayd_take_over_global_executor(enqueueOnEventLoop)
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand { try await command.run() } else { try command.run() }
        } catch {
            exit(withError: error)
        }
    }

    func validate() throws {
        if let idleExit, idleExit <= 0 { throw ValidationError("--idle-exit must be positive") }
        if consentTimeout <= 0 || consentIdle <= 0 { throw ValidationError("--consent-timeout and --consent-idle must be positive") }
        if !(0...65535).contains(pagesPort) { throw ValidationError("--pages-port must be between 0 and 65535") }
        if system && getuid() != 0 { throw ValidationError("--system needs root: replayd drops to its own user from there") }
        if let owner, Self.uid(ofOwner: owner) == nil {
            throw ValidationError("--owner: no user '\(owner)' (give a user name, or a uid from 0 to \(UInt32.max - 1))")
        }
        if Logger.Level(rawValue: logLevel) == nil { throw ValidationError("unknown --log-level '\(logLevel)'") }
        if !["auto", "x11", "portal"].contains(capture) { throw ValidationError("--capture must be auto, x11 or portal") }
        if screenChoiceTimeout <= 0 { throw ValidationError("--screen-choice-timeout must be positive") }
    }

    func run() async throws {
        if inspectProcesses {
            ProcessInspector.serveRequests()
            return
        }
        if check { try checkSandbox() }
        if detach { _ = setsid() }
        signal(SIGPIPE, SIG_IGN)
        // A control daemon's threads seldom allocate at once: one malloc arena, not one per
        // thread that ever allocated, each keeping its free pages (bench/run: about 0.5 MB less after sessions).
        ProcessMemory.useOneArena()
        // Clients and extensions each hold descriptors: the common soft limit of 1,024 is
        // not what a busy daemon should hit first; the hard limit is.
        var descriptors = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &descriptors) == 0, descriptors.rlim_cur < descriptors.rlim_max {
            descriptors.rlim_cur = descriptors.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &descriptors)
        }
        // Control characters in what comes from outside (an app's path, an extension's output) are shown, not obeyed.
        LoggingSystem.bootstrap { VisibleTextLog.standardError(label: $0) }
        var logger = Logger(label: "replayd")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info

        let daemon: Daemon
        do {
            var policy = ConsentPolicy.askEveryone
            if let consentPolicy { policy = try ConsentPolicy.load(from: URL(fileURLWithPath: consentPolicy)) }
            let owner = ownerUID()
            var inspector = ProcessInspector()
            // Socket activation: a service manager (systemd's replayd.socket) made the socket.
            let inherited = try SocketActivation.adoptListener()
            let socketPath = try inherited.map(Self.activatedSocketPath(option: socket))
                ?? socket ?? (system ? "/run/openreplaykit/replayd.sock" : ReplayPaths.defaultSocket().path)
            let storeURL = store.map { URL(fileURLWithPath: $0) }
                ?? (system ? URL(fileURLWithPath: "/var/lib/openreplaykit/recordings") : ReplayPaths.defaultStore())
            // The daemon's private state (the portal's restore token): beside the system store,
            // or the user's XDG state folder.
            let stateFolder = system ? storeURL.deletingLastPathComponent().appendingPathComponent("state") : ReplayPaths.defaultState()
            let tokenFile = stateFolder.appendingPathComponent("screencast-token")
            if system {
                guard let user = ServiceUser(named: "replayd") else {
                    throw ValidationError("--system needs the user 'replayd' (scripts/install-deps creates it)")
                }
                inspector = try ProcessInspector(helperExecutable: Self.ownExecutable)
                try user.makeDirectory(storeURL, mode: 0o700)
                try user.makeDirectory(stateFolder, mode: 0o700)
                // Its socket's directory is the daemon's, and open to every user.
                try user.makeDirectory(URL(fileURLWithPath: socketPath).deletingLastPathComponent(), mode: 0o755)
                try user.become()
            }
            var settings = Daemon.Configuration(
                socketPath: socketPath,
                store: storeURL,
                displayName: display,
                idleExit: idleExit.map { .seconds($0) },
                mode: system ? .system : .user,
                ownerUID: owner,
                trustedExecutables: Self.trustedExecutables(),
                consent: .init(policy: policy, timeout: .seconds(consentTimeout), idleLimit: .seconds(consentIdle)),
                pagesPort: noPages ? nil : pagesPort, inspector: inspector,
                extensionDirectories: extensionsDir.map { URL(fileURLWithPath: $0) })
            let monitorTokenFile = portalTokenFile ?? tokenFile.path
            let tokens = ScreenCastTokens(monitor: RestoreTokenKeeper(file: URL(fileURLWithPath: monitorTokenFile)),
                                          window: RestoreTokenKeeper(file: URL(fileURLWithPath: monitorTokenFile + "-window")))
            let environment = ProcessInfo.processInfo.environment
            settings.capture = switch capture {
            case "x11": .x11
            case "portal": .portal(tokens)
            default: .automatic(environment: environment, tokens: tokens)
            }
            // A system daemon's extensions run as its own user, who may read its state: the
            // sandbox hides it (in user mode it lies under the home, which the sandbox hides too).
            settings.privateStateDirectories = Array(Set([stateFolder, URL(fileURLWithPath: monitorTokenFile).deletingLastPathComponent()]))
            settings.screenChoiceTimeout = Double(screenChoiceTimeout)
            settings.notifications = !noNotify
            settings.consentDialogs = !noConsentDialog
            settings.inheritedListener = inherited
            settings.captureReason = capture == "auto" ? CaptureChoice.automaticReason(environment: environment) : "chosen with --capture \(capture)"
            daemon = try Daemon(configuration: settings, logger: logger)
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode(1)
        }

        // SIGTERM and SIGINT shut the daemon down gracefully: recordings are finished and kept.
        let services = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: DaemonService(daemon: daemon), successTerminationBehavior: .gracefullyShutdownGroup),
                       // Pages that end (replayd stopping, or their server failing) leave the rest running.
                       .init(service: PagesService(daemon: daemon), successTerminationBehavior: .ignore)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await services.run()
    }

    /// Where a handed-over socket is bound, which is where clients find this daemon; with
    /// `--socket` too, it must be the same path, or the service's two halves disagree.
    private static func activatedSocketPath(option: String?) -> (Int32) throws -> String {
        { fd in
            guard let bound = SocketActivation.boundPath(fd) else {
                throw SocketActivation.Failure.notAListeningUnixSocket("not bound to a path (abstract or unnamed)")
            }
            if let option, URL(fileURLWithPath: option).standardized.path != URL(fileURLWithPath: bound).standardized.path {
                throw ValidationError("--socket \(option) differs from the socket handed over by the service manager (\(bound)); drop --socket or make them agree")
            }
            return bound
        }
    }

    /// A user name or a uid; nil when it names nobody.
    private static func uid(ofOwner owner: String) -> UInt32? {
        if let uid = UInt32(owner) { return uid == UInt32.max ? nil : uid }
        return getpwnam(owner)?.pointee.pw_uid
    }

    private func ownerUID() -> UInt32 {
        if let owner, let uid = Self.uid(ofOwner: owner) { return uid }
        if getuid() == 0, let sudoUID = ProcessInfo.processInfo.environment["SUDO_UID"].flatMap(UInt32.init) { return sudoUID }
        return getuid()
    }

    /// The replay CLI and the desktop's dialogs (replay-ui) installed beside this replayd: the
    /// person's own tools.
    private static func trustedExecutables() -> Set<String> {
        let folder = URL(fileURLWithPath: ownExecutable).deletingLastPathComponent()
        return Set(["replay", "replay-ui"].map { folder.appendingPathComponent($0).resolvingSymlinksInPath().path })
    }

    private static var ownExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}

/// Swift's global executor in replayd: a job runs on one of NIO's event loops. Not isolated to
/// the main actor, as a closure written in `main` would be (and checked to be, on each job).
private func enqueueOnEventLoop(_ job: UnsafeMutableRawPointer) {
    MultiThreadedEventLoopGroup.singleton.any().executor.enqueue(ExecutorJob(unsafeBitCast(job, to: UnownedJob.self)))
}
