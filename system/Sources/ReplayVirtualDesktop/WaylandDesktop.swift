public import FoundationEssentials
import ReplayDBus
import ReplayIPC
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// A headless Wayland desktop of our own, for tests and for machines without one: a
/// compositor (GNOME's `mutter --headless --virtual-monitor`, wlroots' sway with its
/// headless backend, or KDE's KWin with its virtual backend), PipeWire with WirePlumber
/// (and pipewire-pulse for sound), xdg-desktop-portal with the compositor's backend, all on a private session bus in a
/// private `XDG_RUNTIME_DIR`; the machine's own bus is never touched.
///
/// GNOME's and KDE's portals show a dialog before sharing a screen unless the permission
/// store holds a restore token for the monitor, so the desktop seeds one, in the format of
/// that desktop's portal, as a person's earlier choice would have; `restoreToken` is it. On
/// sway the portal (xdg-desktop-portal-wlr) runs a chooser program instead of a dialog: ours picks the one output, as a person would, and
/// counts how often it was asked (`dialogsShown`). `stop()` ends every process this desktop started,
/// including those the bus started on demand (found by session id: each program we start
/// leads a session, and what it spawns stays in it).
public final class WaylandDesktop: @unchecked Sendable {
    // @unchecked: the process list is only changed by start (before sharing) and stop (under
    // `lock`); the pointer session only under `lock`.
    /// Which desktop: each has its own compositor and portal backend.
    public enum Compositor: String, Sendable, CaseIterable {
        /// GNOME 43: mutter and xdg-desktop-portal-gnome.
        case gnome
        /// GNOME Shell 43 (`gnome-shell --headless`, mutter inside it) and
        /// xdg-desktop-portal-gnome: the portal shares a window only through the shell's
        /// window list (org.gnome.Shell.Introspect), which mutter alone does not have.
        case gnomeShell
        /// sway 1.7 (wlroots, pixman renderer) and xdg-desktop-portal-wlr, built with the
        /// shared-memory patch of scripts/build-xdpw (stock 0.7.0 needs a GPU).
        case sway
        /// KDE Plasma 5.27: KWin's virtual backend and xdg-desktop-portal-kde. Without a GPU
        /// KWin 5.27 draws with QPainter and its screen casts carry no picture (see
        /// `WaylandDesktop+KDE.swift`): the portal, the restore token and the stream's
        /// negotiation can be tested on it, the pictures cannot.
        case kde

        /// `XDG_CURRENT_DESKTOP`, by which xdg-desktop-portal picks its backend.
        var currentDesktop: String {
            switch self {
            case .gnome, .gnomeShell: "GNOME"
            case .sway: "sway"
            case .kde: "KDE"
            }
        }

        /// The desktops whose screen casts carry pictures on a machine without a GPU.
        public static let withPictures: [Compositor] = [.gnome, .sway]
    }

    public struct Options: Sendable {
        public var compositor: Compositor
        public var width: Int
        public var height: Int
        /// pipewire-pulse with a null sink and source, as `VirtualDesktop` has with PulseAudio.
        public var audio: Bool
        /// A fullscreen picture to show, or nil for the compositor's empty background.
        public var scene: Scene?
        /// Programs the session bus starts on demand, as a desktop's bus does: a bus name and the
        /// command line that starts it (the accessibility bus comes with any).
        public var activatable: [String: String] = [:]

        public init(compositor: Compositor = .gnome, width: Int = 1280, height: Int = 720, audio: Bool = false,
                    scene: Scene? = Scene()) {
            self.compositor = compositor
            self.width = width
            self.height = height
            self.audio = audio
            self.scene = scene
        }
    }

    /// A fullscreen Wayland client (GStreamer into waylandsink): a known background colour
    /// with, when `moving`, a ball that moves every frame. Either way it commits a new buffer
    /// `frameRate` times a second, so the compositor sends as many frames; for a still
    /// screen, start the desktop without a scene.
    ///
    /// With `flashesAndBeeps` (it needs `audio`) it is the demo scene's lip-sync pattern as a
    /// Wayland client: black with a moving grey box, and on every whole second of the
    /// monotonic clock a white flash of 100 ms and a 50 ms 1 kHz beep. It lasts `seconds`.
    public struct Scene: Sendable {
        /// 0xRRGGBB.
        public var background: UInt32
        public var moving: Bool
        public var frameRate: Int
        public var flashesAndBeeps: Bool
        public var seconds: Int
        /// SMPTE colour bars instead (light grey on the left to blue on the right): a picture
        /// that shows which way up it is.
        public var colourBars = false
        /// A window of this size in the middle of the screen instead of the whole screen (on
        /// sway, floating): a client that changes a small part of the screen. Not with
        /// `flashesAndBeeps`.
        public var window: (width: Int, height: Int)?
        /// A still fullscreen GTK window of `background` instead, which sets the desktop's arrow
        /// cursor where the pointer is over it: a compositor shows no cursor over a client that
        /// sets none, as GStreamer's window does. Move the pointer with `movePointer` (GNOME).
        public var showsCursor = false

        public init(background: UInt32 = 0x2060E0, moving: Bool = true, frameRate: Int = 30) {
            self.background = background
            self.moving = moving
            self.frameRate = frameRate
            flashesAndBeeps = false
            seconds = 0
        }

        /// SMPTE colour bars, `frameRate` pictures a second.
        public static func colourBars(frameRate: Int = 30) -> Scene {
            var scene = Scene(frameRate: frameRate)
            scene.colourBars = true
            return scene
        }

        /// The flash-and-beep pattern for `seconds`.
        public static func flashesAndBeeps(seconds: Int, frameRate: Int = 30) -> Scene {
            var scene = Scene(background: 0, moving: true, frameRate: frameRate)
            scene.flashesAndBeeps = true
            scene.seconds = seconds
            return scene
        }
    }

    public let directory: URL
    public let runtimeDirectory: URL
    /// `unix:path=…` of the private session bus.
    public let busAddress: String
    public let compositor: Compositor
    /// The compositor's socket in `runtimeDirectory`.
    public private(set) var waylandDisplay = "wayland-0"
    /// `unix:PATH` of pipewire-pulse, when audio was asked for.
    public private(set) var pulseServer: String?
    /// The token seeded into the permission store: ScreenCast with it needs no dialog. Empty
    /// on sway, whose portal keeps its own restore data: the first cast's token is the one.
    public private(set) var restoreToken = ""
    /// "vendor:product:serial" of the virtual monitor, as the portal's restore data names it
    /// (GNOME); the output's name (sway); the output's place, "0x0" (KDE).
    public private(set) var monitor = ""
    /// Seconds from start to a portal that answers.
    public private(set) var startupSeconds = 0.0
    private var processes: [(name: String, process: ChildProcess)] = []
    private let lock = ConditionLock()

    /// What a client of this desktop needs: the runtime directory, Wayland display, session bus, and audio server.
    public var environment: [String: String] {
        var environment = [
            "XDG_RUNTIME_DIR": runtimeDirectory.path,
            // Where PipeWire's socket is, for clients that outlive a change of XDG_RUNTIME_DIR
            // (the test fixture gives its daemon one of its own): cameras are reached there.
            "PIPEWIRE_RUNTIME_DIR": runtimeDirectory.path,
            "WAYLAND_DISPLAY": waylandDisplay,
            "DBUS_SESSION_BUS_ADDRESS": busAddress,
            "XDG_SESSION_TYPE": "wayland",
            "XDG_CURRENT_DESKTOP": compositor.currentDesktop,
        ]
        if let pulseServer { environment["PULSE_SERVER"] = pulseServer }
        return environment
    }

    /// What the desktop's own programs run with: the client environment plus a private home
    /// (no dconf, no accessibility bus, nothing of the machine's X display or bus).
    private var serverEnvironment: [String: String] {
        var environment = ChildProcess.environment(adding: [:])
        for key in ["DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "PULSE_SERVER", "XAUTHORITY"] {
            environment[key] = nil
        }
        let home = directory.appendingPathComponent("home").path
        environment.merge([
            "HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_DATA_HOME": home + "/.local/share",
            "XDG_CACHE_HOME": home + "/.cache", "XDG_STATE_HOME": home + "/.local/state",
            "GSETTINGS_BACKEND": "memory", "GDK_BACKEND": "wayland", "NO_AT_BRIDGE": "1", "GTK_A11Y": "none",
        ]) { $1 }
        environment.merge(self.environment) { $1 }
        environment["PULSE_SERVER"] = nil
        return environment
    }

    public static func start(_ options: Options = Options()) throws -> WaylandDesktop {
        let started = MonotonicClock.nanoseconds()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("openreplaykit-wayland-\(UUID().uuidString.prefix(8))")
        let desktop = WaylandDesktop(directory: directory, compositor: options.compositor)
        do {
            try desktop.startServices(options)
            desktop.startupSeconds = Double(MonotonicClock.nanoseconds() - started) / 1e9
            return desktop
        } catch {
            desktop.stop()
            throw error
        }
    }

    private init(directory: URL, compositor: Compositor) {
        self.directory = directory
        self.compositor = compositor
        runtimeDirectory = directory.appendingPathComponent("run")
        busAddress = "unix:path=\(runtimeDirectory.path)/bus"
    }

    private func startServices(_ options: Options) throws {
        let services = directory.appendingPathComponent("dbus-services")
        for folder in [runtimeDirectory, services, directory.appendingPathComponent("home/.config")] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        // Only the permission store may be started on demand: it keeps the restore tokens.
        let permissionStore = "/usr/share/dbus-1/services/org.freedesktop.impl.portal.PermissionStore.service"
        guard FileManager.default.fileExists(atPath: permissionStore) else {
            throw VirtualDesktop.StartError(description: "no \(permissionStore) (is xdg-desktop-portal installed?)")
        }
        try FileManager.default.copyItem(atPath: permissionStore, toPath: services.appendingPathComponent("permission-store.service").path)
        for (name, command) in options.activatable {
            try "[D-BUS Service]\nName=\(name)\nExec=\(command)\n"
                .write(to: services.appendingPathComponent("\(name).service"), atomically: true, encoding: .utf8)
        }
        if !options.activatable.isEmpty {
            try FileManager.default.copyItem(atPath: "/usr/share/dbus-1/services/org.a11y.Bus.service",
                                             toPath: services.appendingPathComponent("org.a11y.Bus.service").path)
        }
        let configuration = directory.appendingPathComponent("bus.conf")
        try Self.busConfiguration(socket: runtimeDirectory.appendingPathComponent("bus").path, services: services.path)
            .write(to: configuration, atomically: true, encoding: .utf8)

        try launch("dbus", "/usr/bin/dbus-daemon", ["--config-file=\(configuration.path)", "--nofork", "--nopidfile"])
        try waitFor("the session bus", socket: "bus")
        let bus = try connectBus()

        try launch("pipewire", "/usr/bin/pipewire", [])
        try waitFor("PipeWire", socket: "pipewire-0")
        try launch("wireplumber", "/usr/bin/wireplumber", [])
        if options.audio {
            try launch("pipewire-pulse", "/usr/bin/pipewire-pulse", [])
            try waitFor("pipewire-pulse", socket: "pulse/native")
            pulseServer = "unix:\(runtimeDirectory.path)/pulse/native"
        }
        switch compositor {
        case .gnome, .gnomeShell:
            try startGNOME(options, bus: bus)
        case .sway:
            try startSway(options, bus: bus)
        case .kde:
            try startKDE(options, bus: bus)
        }
        // What the bus starts on demand finds the compositor, as a desktop session tells its bus
        // (dbus-update-activation-environment): sway names its socket only once it runs (mutter
        // is given its name, which the bus has had from the start).
        if compositor == .sway {
            _ = try? bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                              member: "UpdateActivationEnvironment",
                              [.array(element: "{ss}", [.dictEntry(.string("WAYLAND_DISPLAY"), .string(waylandDisplay))])], timeout: 5)
        }
        try launch("xdg-desktop-portal", "/usr/libexec/xdg-desktop-portal", [])
        try waitFor("xdg-desktop-portal", name: "org.freedesktop.portal.Desktop", on: bus)
        try waitForSessionManager()
        if options.audio { try setUpAudio() }

        switch compositor {
        case .gnome, .gnomeShell:
            monitor = try Self.virtualMonitor(on: bus)
            restoreToken = try Self.seedPermission(Self.gnomeRestoreData(sourceType: 1, match: .string(monitor)), on: bus)
        case .kde:
            monitor = Self.kdeOutput
            restoreToken = try Self.seedPermission(Self.kdeRestoreData(output: monitor), on: bus)
        case .sway:
            break
        }
        if let scene = options.scene { try showScene(scene, width: options.width, height: options.height) }
    }

    private func startGNOME(_ options: Options, bus: DBusConnection) throws {
        let arguments = [
            "--headless", "--virtual-monitor", "\(options.width)x\(options.height)", "--wayland", "--no-x11",
            "--wayland-display", waylandDisplay,
        ]
        if compositor == .gnomeShell {
            try startShell(arguments, bus: bus)
        } else {
            try launch("mutter", "/usr/bin/mutter", arguments)
        }
        try waitFor("mutter's screen cast service", name: "org.gnome.Mutter.ScreenCast", on: bus)
        try waitFor("mutter's Wayland socket", socket: waylandDisplay)
        try launch("xdg-desktop-portal-gnome", "/usr/libexec/xdg-desktop-portal-gnome", [])
        try waitFor("the GNOME portal backend", name: "org.freedesktop.impl.portal.desktop.gnome", on: bus)
    }

    // MARK: sway

    /// The user sway runs as: sway 1.7 refuses to run as root. scripts/install-deps makes it.
    static let swayUser = "openreplaykit-desktop"
    /// xdg-desktop-portal-wlr with the shared-memory patch, as scripts/build-xdpw installs it.
    static let patchedPortal = "/usr/local/libexec/openreplaykit/xdg-desktop-portal-wlr"
    /// The headless backend's one output.
    static let swayOutput = "HEADLESS-1"

    private var swayFolder: URL { directory.appendingPathComponent("sway") }
    private var chooserLog: URL { directory.appendingPathComponent("chooser.log") }

    /// How often the portal asked its chooser (sway's stand-in for GNOME's dialog) which output
    /// to share: a cast that a restore token opened asks nothing.
    public var dialogsShown: Int {
        ((try? String(contentsOf: chooserLog, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    private func startSway(_ options: Options, bus: DBusConnection) throws {
        guard let user = getpwnam(Self.swayUser) else {
            throw VirtualDesktop.StartError(description: "no user \(Self.swayUser), which sway runs as: run scripts/install-deps")
        }
        guard FileManager.default.isExecutableFile(atPath: Self.patchedPortal) else {
            throw VirtualDesktop.StartError(description: "\(Self.patchedPortal) is missing: run scripts/install-deps (it runs scripts/build-xdpw)")
        }
        // Sway's runtime directory and home are its own; root (the rest of the desktop) still reaches them.
        try FileManager.default.createDirectory(at: swayFolder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for folder in [runtimeDirectory, swayFolder] where chown(folder.path, user.pointee.pw_uid, user.pointee.pw_gid) != 0 {
            throw VirtualDesktop.StartError(description: "cannot give \(folder.path) to \(Self.swayUser): \(String(cString: strerror(errno)))")
        }
        chmod(directory.path, 0o711)
        let configuration = swayFolder.appendingPathComponent("config")
        try """
            output \(Self.swayOutput) mode \(options.width)x\(options.height) position 0 0
            default_border none
            focus_follows_mouse no
            \(options.scene?.window.map { "for_window [tiling] floating enable, resize set \($0.width) \($0.height), move position center" } ?? "")

            """.write(to: configuration, atomically: true, encoding: .utf8)
        _ = chown(configuration.path, user.pointee.pw_uid, user.pointee.pw_gid)
        try launch("sway", "/usr/bin/setpriv", [
            "--reuid=\(Self.swayUser)", "--regid=\(Self.swayUser)", "--init-groups", "/usr/bin/sway", "-c", configuration.path,
        ], environment: [
            "HOME": swayFolder.path, "XDG_CONFIG_HOME": swayFolder.path, "WLR_BACKENDS": "headless", "WLR_RENDERER": "pixman",
            "WLR_HEADLESS_OUTPUTS": "1", "WLR_LIBINPUT_NO_DEVICES": "1",
        ], removing: ["WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS"])
        try waitFor("sway's Wayland socket") { self.swaySocket().map(self.listens) ?? false }
        waylandDisplay = swaySocket()!
        try waitFor("sway's IPC socket") { self.swayIPCSocket().map { UnixSocket.acceptsConnections(path: $0) } ?? false }
        monitor = Self.swayOutput

        // The chooser answers for a person: the one output, every time it is asked.
        let chooser = directory.appendingPathComponent("chooser")
        try """
            #!/bin/sh
            date +%s.%N >> '\(chooserLog.path)'
            echo \(Self.swayOutput)

            """.write(to: chooser, atomically: true, encoding: .utf8)
        chmod(chooser.path, 0o700)
        let portalConfiguration = directory.appendingPathComponent("home/.config/xdg-desktop-portal-wlr")
        try FileManager.default.createDirectory(at: portalConfiguration, withIntermediateDirectories: true)
        try """
            [screencast]
            chooser_type=simple
            chooser_cmd=\(chooser.path)

            """.write(to: portalConfiguration.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        try launch("xdg-desktop-portal-wlr", Self.patchedPortal, [])
        try waitFor("the wlroots portal backend", name: "org.freedesktop.impl.portal.desktop.wlr", on: bus)
    }

    /// The name of sway's Wayland socket (`wayland-N`), once it has made one.
    private func swaySocket() -> String? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: runtimeDirectory.path)) ?? []
        return names.first { $0.hasPrefix("wayland-") && !$0.hasSuffix(".lock") }
    }

    /// The path of sway's IPC socket (`sway-ipc.*`), once it has made one.
    private func swayIPCSocket() -> String? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: runtimeDirectory.path)) ?? []
        return names.first { $0.hasPrefix("sway-ipc.") }.map { runtimeDirectory.appendingPathComponent($0).path }
    }

    /// Runs `swaymsg` with `arguments` against this desktop's sway.
    private func swaymsg(_ arguments: [String]) throws {
        guard compositor == .sway, let socket = swayIPCSocket() else {
            throw VirtualDesktop.StartError(description: "swaymsg needs the sway desktop")
        }
        guard (try? run("/usr/bin/swaymsg", ["--socket", socket] + arguments)) != nil else {
            throw VirtualDesktop.StartError(description: "sway refused: swaymsg \(arguments.joined(separator: " "))")
        }
    }

    /// A keyboard on sway's seat, as a person's seat has one: headless sway has none, and a
    /// Wayland client has the keyboard focus only while one is there (GTK counts a window
    /// active by it). A virtual one (wtype, reading what to type from a pipe), whose keys sway
    /// delivers as a person's. wtype types what it read once the pipe closes: `typeAndDetach`
    /// types, then the keyboard goes; `detach` takes it away typing nothing.
    public final class Keyboard: @unchecked Sendable {
        // @unchecked: the pipe's end is written by the test that holds the keyboard.
        private let process: ChildProcess
        private var input: Int32

        fileprivate init(environment: [String: String]) throws {
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { throw VirtualDesktop.StartError(description: "no pipe for wtype") }
            _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
            defer { close(ends[0]) }
            do {
                process = try ChildProcess(path: "/usr/bin/wtype", arguments: ["-"], environment: environment, stdin: .descriptor(ends[0]))
            } catch {
                close(ends[1])
                throw VirtualDesktop.StartError(description: "cannot start wtype (scripts/install-deps --test installs it): \(error)")
            }
            input = ends[1]
        }

        /// Types `text` (a tab is the Tab key) on this keyboard, then unplugs it; returns once
        /// the keys are typed.
        public func typeAndDetach(_ text: String) throws {
            let bytes = Array(text.utf8)
            guard input >= 0, write(input, bytes, bytes.count) == bytes.count else {
                throw VirtualDesktop.StartError(description: "the virtual keyboard is gone")
            }
            close(input)
            input = -1
            guard process.wait(timeout: 10) == 0 else { throw VirtualDesktop.StartError(description: "wtype did not type \(bytes.count) keys") }
        }

        /// Unplugs it, typing nothing.
        public func detach() {
            if input >= 0 {
                process.terminate(grace: 1)
                close(input)
            }
            input = -1
        }

        deinit { detach() }
    }

    public func attachKeyboard() throws -> Keyboard {
        guard compositor == .sway else { throw VirtualDesktop.StartError(description: "attachKeyboard needs the sway desktop") }
        return try Keyboard(environment: serverEnvironment)
    }

    /// Sets sway's output transform (`normal`, `90`, `180`, `270`, `flipped`, `flipped-90`, …).
    public func transform(_ name: String) throws {
        try swaymsg(["output", Self.swayOutput, "transform", name])
    }

    /// Changes the output's resolution, as a person choosing another mode would (sway: its
    /// headless output takes any size; mutter's virtual monitor has one mode).
    public func resize(width: Int, height: Int) throws {
        guard compositor == .sway else {
            throw VirtualDesktop.StartError(description: "mutter's virtual monitor has one mode: resize needs the sway desktop")
        }
        try swaymsg(["output", Self.swayOutput, "mode", "\(width)x\(height)"])
    }

    // MARK: stopping

    /// Stops everything this desktop started, newest first, then whatever is left in their
    /// sessions (programs the bus or the compositor started). Safe to call more than once.
    public func stop() {
        let running = lock.withLock {
            let running = processes
            processes = []
            pointer = nil
            return running
        }
        let sessions = Set(running.map(\.process.pid))
        for entry in running.reversed() { entry.process.terminate(grace: 3) }
        for signal in [SIGTERM, SIGKILL] {
            let left = Self.members(of: sessions)
            if left.isEmpty { break }
            for pid in left { kill(pid, signal) }
            let deadline = Date().addingTimeInterval(2)
            while !Self.members(of: sessions).isEmpty && Date() < deadline { Threads.sleep(seconds: 0.05) }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Every live process in the sessions of the programs this desktop started (they lead
    /// their own sessions), for tests that check nothing is left behind.
    public var processIDs: [Int32] {
        lock.withLock { Self.members(of: Set(processes.map(\.process.pid))) }
    }

    deinit { stop() }

    /// Live (not zombie) processes whose session is one of `sessions`.
    public static func members(of sessions: Set<Int32>) -> [Int32] {
        guard !sessions.isEmpty else { return [] }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let end = stat.lastIndex(of: ")") else { return false }
            // After "pid (comm)": state, ppid, pgrp, session.
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            guard fields.count > 3, fields[0] != "Z", let session = Int32(fields[3]) else { return false }
            return sessions.contains(session)
        }
    }

    // MARK: parts

    func launch(_ name: String, _ path: String, _ arguments: [String], environment extra: [String: String] = [:],
                        removing: [String] = []) throws {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw VirtualDesktop.StartError(description: "\(path) is missing: install the Wayland desktop's packages (scripts/install-deps)")
        }
        let log = open(directory.appendingPathComponent("\(name).log").path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        defer { if log >= 0 { close(log) } }
        let output: ChildProcess.Stream = log >= 0 ? .descriptor(log) : .null
        let process: ChildProcess
        do {
            var environment = serverEnvironment.merging(extra) { $1 }
            for key in removing { environment[key] = nil }
            process = try ChildProcess(path: path, arguments: arguments, environment: environment, stdout: output, stderr: output)
        } catch {
            throw VirtualDesktop.StartError(description: "cannot run \(path): \(error)")
        }
        lock.withLock { processes.append((name, process)) }
    }

    /// What the session bus and the programs it started printed.
    public var busLog: String {
        (try? String(contentsOf: directory.appendingPathComponent("dbus.log"), encoding: .utf8)) ?? ""
    }

    /// The last lines a part wrote, for errors.
    private func logTail(_ name: String) -> String {
        let text = (try? String(contentsOf: directory.appendingPathComponent("\(name).log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(5).joined(separator: "\n")
    }

    func checkRunning() throws {
        for entry in lock.withLock({ processes }) where !entry.process.isRunning {
            throw VirtualDesktop.StartError(description: "\(entry.name) exited at start:\n\(logTail(entry.name))")
        }
    }

    func waitFor(_ what: String, timeout: Double = 15, _ ready: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !ready() {
            try checkRunning()
            guard Date() < deadline else { throw VirtualDesktop.StartError(description: "\(what) did not start within \(Int(timeout)) s") }
            Threads.sleep(seconds: 0.02)
        }
    }

    /// Waits until the Unix socket `name` in the runtime directory takes a connection (its file
    /// alone does not say so: see `UnixSocket.acceptsConnections`).
    func waitFor(_ what: String, socket name: String) throws {
        try waitFor(what) { self.listens(name) }
    }

    /// Whether a server listens on the Unix socket `name` in the runtime directory.
    private func listens(_ name: String) -> Bool {
        UnixSocket.acceptsConnections(path: runtimeDirectory.appendingPathComponent(name).path)
    }

    func waitFor(_ what: String, name: String, on bus: DBusConnection) throws {
        try waitFor(what) {
            let reply = try? bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                      member: "NameHasOwner", [.string(name)], timeout: 2)
            return reply?.first == .bool(true)
        }
    }

    func connectBus() throws -> DBusConnection {
        do {
            return try DBusConnection(address: busAddress)
        } catch {
            throw VirtualDesktop.StartError(description: "cannot connect to the desktop's bus: \(error)")
        }
    }

    /// WirePlumber links the portal's stream to its reader; until it is connected to
    /// PipeWire a screen cast would wait forever.
    private func waitForSessionManager() throws {
        try waitFor("WirePlumber") {
            guard let result = try? run("/usr/bin/pw-cli", ["ls", "Client"]) else { return false }
            return result.contains("WirePlumber")
        }
    }

    private func setUpAudio() throws {
        guard let pulseServer else { return }
        for arguments in [
            ["load-module", "module-null-sink", "sink_name=replay_speakers", "sink_properties=device.description=Speakers"],
            ["load-module", "module-null-sink", "media.class=Audio/Source/Virtual", "sink_name=replay_microphone"],
            ["set-default-sink", "replay_speakers"],
            ["set-default-source", "replay_microphone"],
        ] {
            guard (try? run("/usr/bin/pactl", ["--server=\(pulseServer)"] + arguments)) != nil else {
                throw VirtualDesktop.StartError(description: "pactl \(arguments.joined(separator: " ")) failed on pipewire-pulse")
            }
        }
    }

    /// How the scene's waylandsink fills the screen. On sway a tiling compositor's one window
    /// already does, and GStreamer 1.22's `fullscreen=true` fails there and on KWin (it asks
    /// before its window exists, so the window gets no size); on KWin the window is the
    /// screen's size.
    private var sceneFullscreen: String { isGNOME ? "fullscreen=true" : "fullscreen=false" }

    /// mutter, alone or inside GNOME Shell.
    var isGNOME: Bool { compositor == .gnome || compositor == .gnomeShell }

    private func showScene(_ scene: Scene, width: Int, height: Int) throws {
        if scene.flashesAndBeeps { return try showFlashesAndBeeps(scene, width: width, height: height) }
        if scene.showsCursor {
            let rgb = [16, 8, 0].map { String((scene.background >> UInt32($0)) & 0xFF) }
            try launch("scene", "/usr/bin/python3", ["-c", Self.cursorWindow] + rgb)
            Threads.sleep(seconds: 1)
            return try checkRunning()
        }
        let colour = String(printf: "0xff%06x", scene.background & 0xFF_FFFF)
        let fullscreen = scene.window == nil ? sceneFullscreen : "fullscreen=false"
        let (width, height) = scene.window ?? (width, height)
        let pattern = scene.colourBars ? ["pattern=smpte"]
            : scene.moving ? ["pattern=ball", "background-color=\(colour)", "foreground-color=0xffffffff"]
            : ["pattern=solid-color", "foreground-color=\(colour)"]
        try launch("scene", "/usr/bin/gst-launch-1.0", ["-q", "videotestsrc", "is-live=true"] + pattern + [
            "!", "video/x-raw,format=BGRx,width=\(width),height=\(height),framerate=\(scene.frameRate)/1",
            "!", "waylandsink", fullscreen,
        ])
        // Mapped and drawn takes a few frames; a scene that cannot reach the compositor exits.
        Threads.sleep(seconds: 0.5)
        try checkRunning()
    }

    /// The pattern as the X11 demo scene makes it: flash and beep on the same whole seconds
    /// of the monotonic clock. The picture is a clip (FFmpeg's generators: white for the first
    /// 100 ms of every second) played fullscreen by GStreamer with its base time set to such
    /// a second, so clip second k shows at epoch + k; the sound is `replay-demo-scene --beeps`,
    /// which places each beep in its stream by the stream's latency.
    private func showFlashesAndBeeps(_ scene: Scene, width: Int, height: Int) throws {
        guard let pulseServer else {
            throw VirtualDesktop.StartError(description: "the flash-and-beep scene needs the desktop's audio (Options.audio)")
        }
        let clip = directory.appendingPathComponent("flashes.mkv").path
        let seconds = max(1, scene.seconds)
        let video = "color=c=black:s=\(width)x\(height):r=\(scene.frameRate):d=\(seconds),"
            + "drawbox=x='mod(t*\(width / 4)\\,iw-40)':y=ih/2-20:w=40:h=40:c=gray:t=fill,"
            + "drawbox=x=0:y=0:w=iw:h=ih:c=white:t=fill:enable='lt(mod(t\\,1)\\,0.1)'"
        guard (try? run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", video, "-c:v", "mjpeg", "-q:v", "4", clip])) != nil else {
            throw VirtualDesktop.StartError(description: "ffmpeg could not write the flash clip")
        }
        // Four seconds ahead: the picture client starts, and the beep stream settles first
        // (pipewire-pulse's latency estimate wanders while the null sink wakes up).
        let epoch = (MonotonicClock.nanoseconds() / 1_000_000_000 + 4) * 1_000_000_000
        try launch("scene", "/usr/bin/python3", ["-c", Self.clipPlayer, clip, String(epoch), sceneFullscreen])
        try launch("beeps", VirtualDesktop.siblingExecutable("replay-demo-scene").path, ["--verbose", "--beeps", String(epoch)],
                   environment: ["PULSE_SERVER": pulseServer])
        // Until the first flash: a recording that starts now has the whole pattern.
        Threads.sleep(seconds: max(0.5, Double(epoch - MonotonicClock.nanoseconds()) / 1e9))
        try checkRunning()
    }

    /// A fullscreen GTK window in one colour (R G B from 0 to 255), painted by a style sheet
    /// (drawing with cairo from Python would need python3-gi-cairo).
    private static let cursorWindow = """
        import sys, gi
        gi.require_version("Gtk", "3.0")
        from gi.repository import Gtk, Gdk
        style = Gtk.CssProvider()
        style.load_from_data(("window { background: rgb(%s, %s, %s); }" % tuple(sys.argv[1:4])).encode())
        Gtk.StyleContext.add_provider_for_screen(Gdk.Screen.get_default(), style, Gtk.STYLE_PROVIDER_PRIORITY_USER)
        window = Gtk.Window()
        window.connect("destroy", Gtk.main_quit)
        window.fullscreen()
        window.show_all()
        Gtk.main()
        """

    /// Plays a clip fullscreen on the Wayland display, clip time 0 at EPOCH_NS of
    /// CLOCK_MONOTONIC (GStreamer's system clock), through GObject introspection: gst-launch
    /// cannot choose its base time.
    private static let clipPlayer = """
        import sys, gi
        gi.require_version("Gst", "1.0")
        from gi.repository import Gst, GLib
        Gst.init(None)
        clip, epoch, fullscreen = sys.argv[1], int(sys.argv[2]), sys.argv[3]
        pipeline = Gst.parse_launch("filesrc name=clip ! matroskademux ! jpegdec ! videoconvert ! waylandsink " + fullscreen)
        pipeline.get_by_name("clip").set_property("location", clip)
        pipeline.use_clock(Gst.SystemClock.obtain())
        pipeline.set_start_time(Gst.CLOCK_TIME_NONE)
        pipeline.set_base_time(epoch)
        loop = GLib.MainLoop()
        bus = pipeline.get_bus()
        bus.add_signal_watch()
        bus.connect("message::eos", lambda *_: loop.quit())
        bus.connect("message::error", lambda _, message: (print(message.parse_error()[0].message, file=sys.stderr), sys.exit(1)))
        pipeline.set_state(Gst.State.PLAYING)
        loop.run()
        """

    /// Turns the virtual monitor by `quarterTurns` × 90° (0 puts it back), as a person rotating
    /// a screen would: the compositor's picture changes size (640x480 becomes 480x640) and a
    /// screen cast renegotiates its format.
    public func rotate(quarterTurns: Int) throws {
        if compositor == .sway {
            let turns = ((quarterTurns % 4) + 4) % 4
            return try transform(turns == 0 ? "normal" : String(turns * 90))
        }
        let bus = try connectBus()
        let state = try DisplayState(on: bus)
        do {
            let transform = UInt32(((quarterTurns % 4) + 4) % 4)
            let logicalMonitor = DBusValue.structure([
                .int32(0), .int32(0), .double(1), .uint32(transform), .bool(true),
                .array(element: "(ssa{sv})", [.structure([.string(state.connector), .string(state.mode), .array(element: "{sv}", [])])]),
            ])
            // Method 1: temporary, as a person's change that is not saved.
            _ = try bus.call(destination: DisplayState.service, path: DisplayState.path, interface: DisplayState.service,
                             member: "ApplyMonitorsConfig",
                             [.uint32(state.serial), .uint32(1), .array(element: "(iiduba(ssa{sv}))", [logicalMonitor]),
                              .array(element: "{sv}", [])],
                             timeout: 5)
        } catch {
            throw VirtualDesktop.StartError(description: "mutter refused to rotate the monitor: \(error)")
        }
    }

    // MARK: the pointer

    /// A remote-desktop session of mutter's, which moves a virtual pointer. Mutter ends the
    /// session when the connection that made it closes, so the desktop keeps both.
    private struct PointerSession {
        let bus: DBusConnection
        let session: String
        /// A screen-cast stream of the monitor, in whose coordinates the pointer moves.
        let stream: String
    }

    private var pointer: PointerSession?

    /// Moves the pointer to `x`, `y` of the monitor, as a person's mouse would (GNOME: through
    /// mutter's RemoteDesktop API). The first move makes the pointer.
    public func movePointer(x: Double, y: Double) throws {
        guard isGNOME else {
            throw VirtualDesktop.StartError(description: "movePointer needs the GNOME desktop")
        }
        let session = try lock.withLock { () throws -> PointerSession in
            if let pointer { return pointer }
            let made = try makePointerSession()
            pointer = made
            return made
        }
        do {
            _ = try session.bus.call(destination: "org.gnome.Mutter.RemoteDesktop", path: session.session,
                                     interface: "org.gnome.Mutter.RemoteDesktop.Session", member: "NotifyPointerMotionAbsolute",
                                     [.string(session.stream), .double(x), .double(y)], timeout: 5)
        } catch {
            throw VirtualDesktop.StartError(description: "mutter did not move the pointer: \(error)")
        }
    }

    private func makePointerSession() throws -> PointerSession {
        let bus = try connectBus()
        let remote = "org.gnome.Mutter.RemoteDesktop", cast = "org.gnome.Mutter.ScreenCast"
        do {
            let connector = try DisplayState(on: bus).connector
            guard let session = try bus.call(destination: remote, path: "/org/gnome/Mutter/RemoteDesktop", interface: remote,
                                             member: "CreateSession", [], timeout: 5).first?.string,
                  let id = try bus.call(destination: remote, path: session, interface: "org.freedesktop.DBus.Properties", member: "Get",
                                        [.string(remote + ".Session"), .string("SessionId")], timeout: 5).first?.string,
                  let castSession = try bus.call(destination: cast, path: "/org/gnome/Mutter/ScreenCast", interface: cast,
                                                 member: "CreateSession",
                                                 [.array(element: "{sv}", [.dictEntry(.string("remote-desktop-session-id"), .variant(.string(id)))])],
                                                 timeout: 5).first?.string,
                  let stream = try bus.call(destination: cast, path: castSession, interface: cast + ".Session", member: "RecordMonitor",
                                            [.string(connector), .array(element: "{sv}", [])], timeout: 5).first?.string else {
                throw VirtualDesktop.StartError(description: "mutter's remote desktop answered nothing")
            }
            _ = try bus.call(destination: remote, path: session, interface: remote + ".Session", member: "Start", [], timeout: 5)
            return PointerSession(bus: bus, session: session, stream: stream)
        } catch let error as VirtualDesktop.StartError {
            throw error
        } catch {
            throw VirtualDesktop.StartError(description: "cannot make a pointer with mutter's remote desktop: \(error)")
        }
    }

    /// Runs a helper to completion; its standard output, or nil when it failed.
    private func run(_ path: String, _ arguments: [String]) throws -> String? {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return nil }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        let process: ChildProcess
        do {
            process = try ChildProcess(path: path, arguments: arguments, environment: serverEnvironment, stdout: .descriptor(ends[1]))
        } catch {
            close(ends[0])
            close(ends[1])
            throw VirtualDesktop.StartError(description: "cannot run \(path): \(error)")
        }
        close(ends[1])
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(ends[0], &buffer, buffer.count)
            if count <= 0 { break }
            output.append(contentsOf: buffer[0..<count])
        }
        close(ends[0])
        return process.wait() == 0 ? String(decoding: output, as: UTF8.self) : nil
    }

    // MARK: D-Bus

    /// A private session bus listening on `socket`, starting on demand what `services` holds,
    /// open to its one user: the desktops' bus, and the dialog tests' (`DesktopSession`).
    public static func busConfiguration(socket: String, services: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <keep_umask/>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <servicedir>\(services)</servicedir>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
    }

    /// The virtual monitor as "vendor:product:serial", from mutter's DisplayConfig.
    private static func virtualMonitor(on bus: DBusConnection) throws -> String {
        let state = try DisplayState(on: bus)
        return "\(state.vendor):\(state.product):\(state.monitorSerial)"
    }

    /// Mutter's one monitor, as its DisplayConfig's GetCurrentState describes it.
    private struct DisplayState {
        static let service = "org.gnome.Mutter.DisplayConfig"
        static let path = "/org/gnome/Mutter/DisplayConfig"

        /// The configuration's serial, which ApplyMonitorsConfig must name.
        let serial: UInt32
        let connector, vendor, product, monitorSerial: String
        /// The monitor's first mode's id.
        let mode: String

        init(on bus: DBusConnection) throws {
            let state = try? bus.call(destination: Self.service, path: Self.path, interface: Self.service, member: "GetCurrentState",
                                      [], timeout: 5)
            // (serial, monitors [((connector, vendor, product, serial), modes [(id, …)], properties)], logical monitors, properties)
            guard let state, let serial = state.first?.uint32, let monitor = state.dropFirst().first?.elements?.first?.elements,
                  let spec = monitor.first?.elements, spec.count == 4, let connector = spec[0].string, let vendor = spec[1].string,
                  let product = spec[2].string, let monitorSerial = spec[3].string,
                  let mode = monitor.dropFirst().first?.elements?.first?.elements?.first?.string else {
                throw VirtualDesktop.StartError(description: "mutter's DisplayConfig described no monitor")
            }
            self.serial = serial
            self.connector = connector
            self.vendor = vendor
            self.product = product
            self.monitorSerial = monitorSerial
            self.mode = mode
        }
    }

    /// What xdg-desktop-portal-gnome restores one source from: ("GNOME", 1, <(created, last
    /// used, [(id, source type, <match>)])>); a monitor (type 1) matches by "vendor:product:serial",
    /// a window (type 2) by (app id, title).
    static func gnomeRestoreData(sourceType: UInt32, match: DBusValue) -> DBusValue {
        .structure([
            .string("GNOME"), .uint32(1),
            .variant(.structure([.int64(0), .int64(0), .array(element: "(uuv)", [.structure([.uint32(0), .uint32(sourceType), .variant(match)])])])),
        ])
    }

    /// Stores a screen-cast permission for unsandboxed apps (app id ""), with the portal
    /// backend's own `restoreData` (the frontend hands it back to the backend), under a new
    /// token, which it returns.
    static func seedPermission(_ restoreData: DBusValue, on bus: DBusConnection) throws -> String {
        let token = UUID().uuidString.lowercased()
        let store = (destination: "org.freedesktop.impl.portal.PermissionStore", path: "/org/freedesktop/impl/portal/PermissionStore")
        do {
            _ = try bus.call(destination: store.destination, path: store.path, interface: store.destination, member: "SetPermission",
                             [.string("screencast"), .bool(true), .string(token), .string(""), .array(element: "s", [.string("yes")])],
                             timeout: 10)
            _ = try bus.call(destination: store.destination, path: store.path, interface: store.destination, member: "SetValue",
                             [.string("screencast"), .bool(true), .string(token), .variant(restoreData)], timeout: 10)
        } catch {
            throw VirtualDesktop.StartError(description: "cannot seed the portal's permission store: \(error)")
        }
        return token
    }
}
