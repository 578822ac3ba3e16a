public import Foundation
import ReplayIPC
import ReplaySystem
import ReplayVirtualDesktop
#if canImport(Glibc)
import Glibc
#endif

/// A person's graphical session for the desktop's dialogs: a private session bus that starts
/// `replay-ui` on demand (its D-Bus activation file names the built program) and the
/// accessibility bus (at-spi2-core's launcher, started on that bus as on a desktop), with the
/// fixture's display and socket in what it starts. Windows are found through AT-SPI as a screen
/// reader finds them (`accessibility`), and pressed with real input by the test (xdotool on X11).
///
/// Everything the bus started (replay-ui, the accessibility bus and its registry) is in the bus's
/// process group, ended with it by `stop`.
public final class DesktopSession: @unchecked Sendable {
    // @unchecked: set up in init, then only stopped.
    public let directory: URL
    /// `unix:path=…`: give it to replayd as DBUS_SESSION_BUS_ADDRESS.
    public let busAddress: String
    public static let dialogs = VirtualDesktop.siblingExecutable("replay-ui").path
    private var bus: ChildProcess?

    /// - Parameter environment: the fixture's (display, runtime folder), which the programs the
    ///   bus starts get; plus the daemon's socket as `$OPENREPLAYKIT_SOCKET`.
    /// - Parameter dialogs: the program the bus starts as `org.openreplaykit.UI` (nil: none).
    public init(in parent: URL, environment: [String: String], socket: String, dialogs: String? = DesktopSession.dialogs) throws {
        directory = parent.appendingPathComponent("session")
        let services = directory.appendingPathComponent("services")
        try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
        busAddress = "unix:path=\(directory.path)/bus"
        if let dialogs {
            try """
                [D-BUS Service]
                Name=org.openreplaykit.UI
                Exec=\(dialogs) --gapplication-service
                """.write(to: services.appendingPathComponent("org.openreplaykit.UI.service"), atomically: true, encoding: .utf8)
        }
        // The accessibility bus, as the desktop's session bus starts it; nothing else of the
        // machine's services (its portals would start for every GTK program).
        try FileManager.default.copyItem(atPath: "/usr/share/dbus-1/services/org.a11y.Bus.service",
                                         toPath: services.appendingPathComponent("org.a11y.Bus.service").path)
        let configuration = directory.appendingPathComponent("bus.conf")
        // The same bus as the Wayland desktops': a session bus of the test's alone.
        try WaylandDesktop.busConfiguration(socket: directory.appendingPathComponent("bus").path, services: services.path)
            .write(to: configuration, atomically: true, encoding: .utf8)
        var variables = environment
        variables["OPENREPLAYKIT_SOCKET"] = socket
        variables["DBUS_SESSION_BUS_ADDRESS"] = busAddress
        // GTK's settings in memory, and no portal: the session is the test's alone.
        variables["GSETTINGS_BACKEND"] = "memory"
        variables["GTK_USE_PORTAL"] = "0"
        let log = open(directory.appendingPathComponent("bus.log").path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        defer { close(log) }
        bus = try ChildProcess(path: "/usr/bin/dbus-daemon", arguments: ["--config-file=\(configuration.path)", "--nofork"],
                               environment: ChildProcess.environment(adding: variables), stdout: .descriptor(log), stderr: .descriptor(log))
        guard poll(timeout: 5, every: 0.02, { UnixSocket.acceptsConnections(path: "\(directory.path)/bus") ? true : nil }) != nil else {
            stop()
            throw MediaProbe.Failure(description: "the session bus did not start: \(self.log)")
        }
    }

    /// What the bus and the programs it started printed (replay-ui's refusals among them).
    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("bus.log"), encoding: .utf8)) ?? ""
    }

    /// The accessibility tree of the programs on this bus.
    public var accessibility: AccessibilityTree { AccessibilityTree(busAddress: busAddress) }

    /// Ends the bus and everything it started (its process group).
    public func stop() {
        if let bus {
            kill(-bus.pid, SIGTERM)
            if poll(timeout: 3, every: 0.05, { Self.groupIsEmpty(bus.pid) ? true : nil }) == nil { kill(-bus.pid, SIGKILL) }
            bus.terminate(grace: 1)
        }
        bus = nil
    }

    private static func groupIsEmpty(_ group: Int32) -> Bool {
        kill(-group, 0) != 0 && errno == ESRCH
    }

    deinit { stop() }
}

/// The windows and controls of the programs on a session bus, through AT-SPI, as a screen reader
/// finds them: on `DesktopSession`'s bus, or a Wayland desktop's.
public struct AccessibilityTree: Sendable {
    public let busAddress: String

    public init(busAddress: String) { self.busAddress = busAddress }

    /// One accessible object as AT-SPI describes it.
    public struct Accessible: Sendable, Equatable {
        public let role: String
        public let name: String
        /// In screen coordinates.
        public let x, y, width, height: Int
        public let sensitive: Bool
        public let showing: Bool
        /// Its accessible description (a widget's tooltip, in GTK).
        public let description: String
        public var center: (x: Int, y: Int) { (x + width / 2, y + height / 2) }
    }

    /// Waits up to `timeout` seconds for an accessible of `application` with this role (`*`: any)
    /// and name (and, with `sensitive`, that sensitivity; with `description`, that description); nil when none came.
    public func find(_ application: String, role: String, name: String, sensitive: Bool? = nil, description: String? = nil,
                     timeout: Double = 20) throws -> Accessible? {
        let result = try probe(["find", application, role, name, sensitive.map { $0 ? "sensitive" : "insensitive" } ?? "any", String(timeout)]
                               + (description.map { [$0] } ?? []), timeout: timeout + 10)
        guard result.status == 0, let line = result.stdout.split(separator: "\n").last,
              let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
        return Accessible(role: object["role"] as? String ?? "", name: object["name"] as? String ?? "",
                          x: object["x"] as? Int ?? 0, y: object["y"] as? Int ?? 0,
                          width: object["width"] as? Int ?? 0, height: object["height"] as? Int ?? 0,
                          sensitive: object["sensitive"] as? Bool ?? false, showing: object["showing"] as? Bool ?? false,
                          description: object["description"] as? String ?? "")
    }

    /// Waits up to `timeout` seconds until `application` shows no accessible with this role
    /// and name (its window closed, or the program exited); false when one is still there.
    public func awaitGone(_ application: String, role: String, name: String, timeout: Double = 20) throws -> Bool {
        try probe(["gone", application, role, name, String(timeout)], timeout: timeout + 10).status == 0
    }

    /// Performs the accessible's first action (a button's "click") through AT-SPI, as any
    /// client of the accessibility bus may: what an app trying to press a button would do.
    /// Returns once the program has handled it (AT-SPI's call is answered after the action).
    public func doAction(_ application: String, role: String, name: String) throws -> CommandResult {
        try probe(["act", application, role, name], timeout: 30)
    }

    private func probe(_ arguments: [String], timeout: Double) throws -> CommandResult {
        try Command.run("/usr/bin/python3", ["-c", Self.probeScript] + arguments,
                        environment: ["DBUS_SESSION_BUS_ADDRESS": busAddress, "PATH": "/usr/bin:/bin"], timeout: timeout)
    }

    /// AT-SPI through pyatspi (Debian's python3-pyatspi), as Orca reads a desktop: the tree is
    /// read every 0.2 s until what is awaited is there (or gone), or time runs out.
    static let probeScript = #"""
        import json, sys, time
        import pyatspi

        command, app_name, role, name = sys.argv[1:5]

        def matches(node):
            return node is not None and role in ("*", node.getRoleName()) and node.name == name

        def search():
            for app in pyatspi.Registry.getDesktop(0):
                if app is None or app.name != app_name:
                    continue
                try:
                    found = pyatspi.findDescendant(app, matches)
                except Exception:
                    found = None
                # GTK 4.8 sets SHOWING on windows alone: a widget is there while it is in the tree.
                if found is not None:
                    return found
            return None

        def describe(node):
            box = node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
            states = node.getState()
            return {"role": node.getRoleName(), "name": node.name, "x": box.x, "y": box.y,
                    "width": box.width, "height": box.height,
                    "sensitive": states.contains(pyatspi.STATE_SENSITIVE), "description": node.description or "",
                    "showing": states.contains(pyatspi.STATE_SHOWING)}

        if command == "find":
            wanted, timeout = sys.argv[5], float(sys.argv[6])
            description = sys.argv[7] if len(sys.argv) > 7 else None
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                node = search()
                if node is not None:
                    described = describe(node)
                    if (wanted == "any" or described["sensitive"] == (wanted == "sensitive")) and \
                       (description is None or described["description"] == description):
                        print(json.dumps(described))
                        sys.exit(0)
                time.sleep(0.2)
            sys.exit(1)
        elif command == "gone":
            deadline = time.monotonic() + float(sys.argv[5])
            while time.monotonic() < deadline:
                if search() is None:
                    sys.exit(0)
                time.sleep(0.2)
            sys.exit(1)
        elif command == "act":
            node = search()
            if node is None:
                print("no such accessible", file=sys.stderr)
                sys.exit(2)
            action = node.queryAction()
            print(json.dumps({"action": action.getName(0), "done": bool(action.doAction(0))}))
        """#
}
