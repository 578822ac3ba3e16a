import FoundationEssentials
import ReplayDBus
import ReplaySystem

/// GNOME Shell 43 headless, for what needs the shell: sharing one window. xdg-desktop-portal-gnome
/// finds windows (and restores a chosen one) through the shell's org.gnome.Shell.Introspect.
extension WaylandDesktop {
    /// The app id of `showWindow`'s windows. The desktop writes a desktop file for it, so the
    /// shell knows the app and the portal can name its windows by it.
    public static let testWindowApp = "org.openreplaykit.TestWindow"

    func startShell(_ arguments: [String], bus: DBusConnection) throws {
        let applications = directory.appendingPathComponent("home/.local/share/applications")
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        try "[Desktop Entry]\nType=Application\nName=OpenReplayKit test window\nExec=/bin/true\n"
            .write(to: applications.appendingPathComponent(Self.testWindowApp + ".desktop"), atomically: true, encoding: .utf8)
        // The shell's startup reaches the system bus (logind, polkit, accounts) and stops without
        // one: it gets the private bus, where those services are simply absent.
        try launch("gnome-shell", "/usr/bin/gnome-shell", arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": busAddress])
        try waitFor("GNOME Shell's window list", name: "org.gnome.Shell.Introspect", on: bus)
    }

    /// Opens a window of `testWindowApp` titled `title`, in one colour (R G B from 0 to 255),
    /// `width` x `height`, where the shell places it; returns once it is on the screen.
    public func showWindow(title: String, colour: (red: Int, green: Int, blue: Int), width: Int, height: Int) throws {
        guard compositor == .gnomeShell else {
            throw VirtualDesktop.StartError(description: "showWindow needs the GNOME Shell desktop")
        }
        let name = "window-\(UUID().uuidString.prefix(8))"
        try launch(name, "/usr/bin/python3", [
            "-c", Self.testWindow, Self.testWindowApp, title, String(colour.red), String(colour.green), String(colour.blue),
            String(width), String(height),
        ])
        // It says when it is mapped (a window that cannot reach the compositor exits instead).
        let log = directory.appendingPathComponent("\(name).log")
        try waitFor("the window '\(title)'") { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("drawn") }
    }

    /// Stores a restore token for the window titled `title` in xdg-desktop-portal-gnome's format,
    /// as a person's earlier choice of it in GNOME's dialog would have, and returns it. The
    /// shell names the app by its desktop file.
    public func seedWindowToken(title: String) throws -> String {
        let window = DBusValue.structure([.string(Self.testWindowApp + ".desktop"), .string(title)])
        return try Self.seedPermission(Self.gnomeRestoreData(sourceType: 2, match: window), on: try connectBus())
    }

    /// A GTK window: app id, title, R G B, width, height. Its own instance (NON_UNIQUE), so two
    /// windows of the app are two processes; painted by a style sheet.
    private static let testWindow = """
        import sys, gi
        gi.require_version("Gtk", "3.0")
        from gi.repository import Gtk, Gdk, Gio
        app_id, title, red, green, blue, width, height = sys.argv[1:8]
        style = Gtk.CssProvider()
        style.load_from_data(("window { background: rgb(%s, %s, %s); }" % (red, green, blue)).encode())
        def activate(app):
            Gtk.StyleContext.add_provider_for_screen(Gdk.Screen.get_default(), style, Gtk.STYLE_PROVIDER_PRIORITY_USER)
            window = Gtk.ApplicationWindow(application=app, title=title)
            window.set_default_size(int(width), int(height))
            # Mapped: GTK has drawn and committed its first picture. (The draw signal itself
            # would need python3-gi-cairo.)
            def mapped(*_):
                print("drawn", flush=True)
                window.disconnect(handler)
            handler = window.connect_after("map-event", mapped)
            window.show_all()
        app = Gtk.Application(application_id=app_id, flags=Gio.ApplicationFlags.NON_UNIQUE)
        app.connect("activate", activate)
        app.run(None)
        """
}
