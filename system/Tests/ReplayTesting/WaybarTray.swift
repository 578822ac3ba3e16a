public import Foundation
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// A real StatusNotifierItem host for tests: waybar 0.9.17 with only its `tray` module, on a
/// sway `WaylandDesktop`. Waybar owns `org.kde.StatusNotifierWatcher` on the desktop's bus and
/// is the host too (one connection: the unique name that owns the watcher is the one that calls
/// the items). It is pressed with a person's pointer: sway's own `seat - cursor set|press|release`.
///
/// Headless sway has no pointer device, so its seat has no pointer capability and no client
/// gets a `wl_pointer`: cursor commands reach nobody. wayvnc (on a Unix socket, nobody connects)
/// makes a virtual pointer and keyboard at start, which gives the seat both while it runs; the
/// cursor commands then arrive as any mouse's would. Needs waybar, wayvnc, grim and dbus-send.
///
/// What waybar does, as measured (bus traffic seen with dbus-monitor):
/// - it shows only items that call `RegisterStatusNotifierItem` while it runs: one registered
///   before it started (or before it restarted) is not shown. Items must re-register when
///   `org.kde.StatusNotifierWatcher` gets an owner.
/// - on registration: `Properties.GetAll("org.kde.StatusNotifierItem")` on the item's path,
///   then `Properties.GetAll("com.canonical.dbusmenu")` on `Menu`, `GetLayout(0, -1, [type, label,
///   visible, enabled, children-display, accessible-desc])`, `GetGroupProperties([0, 1, 2], [])`.
///   No `Introspect`, no `Get`. Any `New*` signal of the item: one more `GetAll`.
/// - right click opens the menu: `AboutToShowGroup([0])` when the menu's `Version` is 3,
///   `AboutToShow(0)` below; a click on an item: `EventGroup([(id, "clicked", <int32 0>, time)])`
///   with Version 3, `Event(id, "clicked", <int32 0>, time)` below. With Version 3 a failing
///   `EventGroup` is not retried as `Event`: the click is lost. `LayoutUpdated` → `GetLayout` again.
/// - left click: `Activate(x, y)`, middle: `SecondaryActivate`, wheel: `Scroll(±2, "vertical")`;
///   x, y are in the icon's slot (12, 16 for its centre), not on the screen.
/// - an item whose bus name goes away leaves the tray.
public final class WaybarTray: @unchecked Sendable {
    // @unchecked: the processes are set up in init and only stopped afterwards.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The bar as `configuration` sets it up, and where waybar 0.9.17 draws, measured with grim on
    /// a 1280x720 output: the bar is y 0..<32, colour #202020; item slots are 24 px wide with
    /// 8 px between them, right-aligned 8 px from the output's edge, the oldest item leftmost
    /// (the first item's slot is x 1248..<1272, its 16x16 `media-record` icon at 1252...1267,
    /// 8...23; a second item's slot 32 px to the left).
    public static let barHeight = 32
    public static let iconSize = 24
    public static let spacing = 8
    public static let padding = 8
    public static let barColour = DecodedFrame.RGB(r: 0x20, g: 0x20, b: 0x20)

    /// A GTK menu (Adwaita) of label-only items, measured: 1 px border, 4 px padding, items 25 px
    /// high. Opened by a right click at the first item's centre (1260, 16), near the right edge,
    /// it opens to the left of the pointer, its white surface x 1166...1259 (as wide as its
    /// labels), y 17...74 for two items: "Pause" y 21...45, "Stop" 46...70, highlighted in
    /// blue (53, 132, 228) under the pointer.
    public struct Menu: Sendable, Equatable {
        /// The white surface, inside the border.
        public let x, y, width, height: Int

        public static let padding = 4
        public static let itemHeight = 25

        /// Where a person clicks the item at `position` (0 the first): its middle.
        public func centre(ofItemAt position: Int) -> (x: Int, y: Int) {
            (x + width / 2, y + Self.padding + position * Self.itemHeight + Self.itemHeight / 2)
        }

        /// How many label-only items it has room for.
        public var itemCount: Int { (height - 2 * Self.padding) / Self.itemHeight }
    }

    public let directory: URL
    private let environment: [String: String]
    private let swaySocket: String
    /// The output's size, from sway.
    public let width: Int
    public let height: Int
    private var processes: [ChildProcess] = []

    /// Starts the pointer and waybar on the sway desktop that `environment` describes
    /// (`WaylandDesktop.environment`: XDG_RUNTIME_DIR, WAYLAND_DISPLAY, DBUS_SESSION_BUS_ADDRESS;
    /// SWAYSOCK when given, else sway's `sway-ipc.*` socket in XDG_RUNTIME_DIR); returns once the
    /// bar is drawn and owns the watcher.
    public init(environment given: [String: String]) throws {
        guard let runtime = given["XDG_RUNTIME_DIR"], given["WAYLAND_DISPLAY"] != nil, given["DBUS_SESSION_BUS_ADDRESS"] != nil else {
            throw Failure(description: "WaybarTray needs XDG_RUNTIME_DIR, WAYLAND_DISPLAY and DBUS_SESSION_BUS_ADDRESS")
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? []
        guard let socket = given["SWAYSOCK"] ?? names.first(where: { $0.hasPrefix("sway-ipc.") }).map({ runtime + "/" + $0 }) else {
            throw Failure(description: "no sway IPC socket in \(runtime): WaybarTray needs the sway desktop")
        }
        swaySocket = socket
        (width, height) = try Self.outputSize(swaySocket: socket)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ork-waybar-\(UUID().uuidString.prefix(8))")
        // Nothing of the machine's display, bus or configuration: a private home.
        var environment = ChildProcess.environment(adding: [:])
        for key in ["DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "SWAYSOCK"] { environment[key] = nil }
        let home = directory.appendingPathComponent("home").path
        environment.merge([
            "HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_CACHE_HOME": home + "/.cache", "GSETTINGS_BACKEND": "memory",
            "GDK_BACKEND": "wayland", "NO_AT_BRIDGE": "1", "GTK_A11Y": "none", "SWAYSOCK": socket,
        ]) { $1 }
        environment.merge(given) { $1 }
        self.environment = environment

        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        do {
            try start("wayvnc", "/usr/bin/wayvnc", ["--unix-socket", directory.appendingPathComponent("vnc").path])
            guard poll(timeout: 10, every: 0.05, { (try? self.seatHasPointer()) == true ? true : nil }) != nil else {
                throw Failure(description: "wayvnc gave sway's seat no pointer:\n\(log("wayvnc"))")
            }
            try writeConfiguration()
            try start("waybar", "/usr/bin/waybar", [
                "-c", directory.appendingPathComponent("config").path, "-s", directory.appendingPathComponent("style.css").path,
            ])
            guard poll(timeout: 15, every: 0.1, { (try? self.watcherOwner()) != nil ? true : nil }) != nil else {
                throw Failure(description: "waybar did not take org.kde.StatusNotifierWatcher:\n\(log("waybar"))")
            }
            guard poll(timeout: 10, every: 0.1, { (try? self.screenshot().pixel(x: 1, y: 1)) == Self.barColour ? true : nil }) != nil else {
                throw Failure(description: "waybar's bar was not drawn:\n\(log("waybar"))")
            }
        } catch {
            stop()
            throw error
        }
    }

    // MARK: the bus

    /// The unique name that owns `org.kde.StatusNotifierWatcher`: waybar's connection, which
    /// also calls the items (Activate, GetLayout, EventGroup).
    public func watcherOwner() throws -> String {
        let result = try dbusSend(["--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.GetNameOwner",
                                   "string:org.kde.StatusNotifierWatcher"])
        let owner = result.trimmingCharacters(in: .whitespacesAndNewlines)
        guard owner.hasPrefix(":") else { throw Failure(description: "no owner of the watcher: \(result)") }
        return owner
    }

    /// The watcher's `RegisteredStatusNotifierItems`, as waybar names them ("BUSNAME/PATH").
    public func registeredItems() throws -> [String] {
        let result = try dbusSend(["--dest=org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher",
                                   "org.freedesktop.DBus.Properties.Get", "string:org.kde.StatusNotifierWatcher",
                                   "string:RegisteredStatusNotifierItems"])
        // "variant array [ NAME/PATH ... ]"
        return result.split(whereSeparator: \.isWhitespace).map(String.init).filter { $0.contains("/") }
    }

    /// Waits until the watcher lists `count` items and the rightmost slot is drawn.
    public func waitForItems(count: Int = 1, timeout: Double = 10) throws {
        let shown = poll(timeout: timeout, every: 0.1) { () -> Bool? in
            guard (try? registeredItems().count) == count else { return nil }
            return count == 0 || (try? isItemDrawn(index: 0)) == true ? true : nil
        }
        guard shown != nil else {
            throw Failure(description: "the tray did not show \(count) items (watcher lists \((try? registeredItems()) ?? []))")
        }
    }

    // MARK: the screen

    /// The centre of the slot of the item `index` counted from the right (0 the rightmost, the
    /// newest), in output coordinates.
    public func itemCentre(index: Int = 0) -> (x: Int, y: Int) {
        (width - Self.padding - Self.iconSize / 2 - index * (Self.iconSize + Self.spacing), Self.barHeight / 2)
    }

    /// Whether the slot of item `index` shows anything but the bar's colour.
    public func isItemDrawn(index: Int = 0) throws -> Bool {
        try parkPointer()
        let shot = try screenshot()
        let centre = itemCentre(index: index)
        let half = Self.iconSize / 2
        return shot.fraction(x: centre.x - half, y: centre.y - half, width: Self.iconSize, height: Self.iconSize, step: 2) {
            $0 != Self.barColour
        } > 0.1
    }

    /// The whole output as grim reads it from sway (the pointer is drawn into it: see
    /// `parkPointer`); also kept at `png` when given, for a person to look at.
    public func screenshot(to png: URL? = nil) throws -> DecodedFrame {
        let file = png ?? directory.appendingPathComponent("screenshot-\(UUID().uuidString.prefix(8)).png")
        let result = try Command.run("/usr/bin/grim", [file.path], environment: environment, timeout: 20)
        guard result.status == 0 else { throw Failure(description: "grim: \(result)") }
        defer { if png == nil { try? FileManager.default.removeItem(at: file) } }
        return try DecodedFrame(file, at: 0, width: width, height: height)
    }

    // MARK: the pointer

    /// Moves the pointer, as a person's mouse would, to `x`, `y` of the output.
    public func movePointer(x: Int, y: Int) throws {
        try swaymsg(["seat", "-", "cursor", "set", String(x), String(y)])
    }

    /// Moves the pointer to the output's bottom-left corner, off the bar and any menu.
    public func parkPointer() throws {
        try movePointer(x: 0, y: height - 1)
    }

    /// Presses and releases `button` (1 left, 2 middle, 3 right, 4 and 5 the wheel) where the pointer is.
    public func click(button: Int = 1) throws {
        try swaymsg(["seat", "-", "cursor", "press", "button\(button)"])
        try swaymsg(["seat", "-", "cursor", "release", "button\(button)"])
    }

    /// A left click on item `index` (from the right): waybar calls its `Activate`.
    public func clickTrayItem(index: Int = 0, button: Int = 1) throws {
        let centre = itemCentre(index: index)
        try movePointer(x: centre.x, y: centre.y)
        try click(button: button)
    }

    /// A right click on item `index` (from the right): waybar opens the item's dbusmenu as a
    /// GTK menu; returns it as found on the screen once drawn (the pointer is then parked).
    @discardableResult
    public func rightClickTrayItem(index: Int = 0, timeout: Double = 10) throws -> Menu {
        let centre = itemCentre(index: index)
        try movePointer(x: centre.x, y: centre.y)
        try click(button: 3)
        try parkPointer()
        guard let menu = poll(timeout: timeout, every: 0.1, { try? findMenu(near: centre) }) else {
            throw Failure(description: "no menu opened after a right click at \(centre):\n\(log("waybar"))")
        }
        return menu
    }

    /// Clicks the item at `position` (0 the first) of an open `menu`, as a person would: the
    /// pointer goes there, and once GTK shows the item highlighted, it clicks; returns once the
    /// menu has closed.
    public func clickMenuItem(at position: Int, of menu: Menu, timeout: Double = 10) throws {
        guard position >= 0, position < menu.itemCount else {
            throw Failure(description: "the menu has \(menu.itemCount) items, not an item \(position)")
        }
        let target = menu.centre(ofItemAt: position)
        try movePointer(x: target.x, y: target.y)
        // Highlighted: the row's left edge is no longer the menu's white.
        let highlighted = poll(timeout: timeout, every: 0.05) {
            (try? screenshot().pixel(x: menu.x + 2, y: target.y)).map(Self.isMenuWhite) == false ? true : nil
        }
        guard highlighted != nil else { throw Failure(description: "the menu item \(position) was not highlighted under the pointer") }
        try click(button: 1)
        try parkPointer()
        let closed = poll(timeout: timeout, every: 0.1) {
            (try? screenshot().pixel(x: menu.x + 2, y: menu.y + 2)).map(Self.isMenuWhite) == false ? true : nil
        }
        guard closed != nil else { throw Failure(description: "the menu stayed open after a click on item \(position)") }
    }

    /// The open menu's white surface next to a right click at `point`: GTK puts its top-left
    /// corner at the pointer, or its top-right when it would leave the screen (always so for
    /// the tray, at the right edge). A row 8 px below the pointer is in the first item's top
    /// padding, clear of its label; the column 8 px beside it is clear of labels (left-aligned).
    private func findMenu(near point: (x: Int, y: Int)) throws -> Menu? {
        let shot = try screenshot()
        let seedY = point.y + 8
        for seedX in [point.x - 8, point.x + 8] where seedX >= 0 && seedX < width && Self.isMenuWhite(shot.pixel(x: seedX, y: seedY)) {
            var left = seedX, right = seedX, top = seedY, bottom = seedY
            while left > 0 && Self.isMenuWhite(shot.pixel(x: left - 1, y: seedY)) { left -= 1 }
            while right < width - 1 && Self.isMenuWhite(shot.pixel(x: right + 1, y: seedY)) { right += 1 }
            while top > 0 && Self.isMenuWhite(shot.pixel(x: seedX, y: top - 1)) { top -= 1 }
            while bottom < height - 1 && Self.isMenuWhite(shot.pixel(x: seedX, y: bottom + 1)) { bottom += 1 }
            let menu = Menu(x: left, y: top, width: right - left + 1, height: bottom - top + 1)
            if menu.itemCount > 0 && menu.width > 20 { return menu }
        }
        return nil
    }

    private static func isMenuWhite(_ pixel: DecodedFrame.RGB) -> Bool { pixel.r >= 240 && pixel.g >= 240 && pixel.b >= 240 }

    // MARK: parts

    /// The bar at the top, with only the tray; a plain style so the slots are where measured.
    private func writeConfiguration() throws {
        try """
            {
                "layer": "top",
                "position": "top",
                "height": \(Self.barHeight),
                "modules-left": [],
                "modules-center": [],
                "modules-right": ["tray"],
                "tray": { "icon-size": \(Self.iconSize), "spacing": \(Self.spacing) }
            }

            """.write(to: directory.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        try """
            * { font-family: sans-serif; font-size: 13px; min-height: 0; border: none; border-radius: 0; }
            window#waybar { background: #202020; color: #ffffff; }
            #tray { padding: 0 \(Self.padding)px; }

            """.write(to: directory.appendingPathComponent("style.css"), atomically: true, encoding: .utf8)
    }

    private func start(_ name: String, _ path: String, _ arguments: [String]) throws {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Failure(description: "\(path) is missing (apt-get install waybar wayvnc grim)")
        }
        let log = open(directory.appendingPathComponent("\(name).log").path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        defer { if log >= 0 { close(log) } }
        let output: ChildProcess.Stream = log >= 0 ? .descriptor(log) : .null
        do {
            processes.append(try ChildProcess(path: path, arguments: arguments, environment: environment, stdout: output, stderr: output))
        } catch {
            throw Failure(description: "cannot run \(path): \(error)")
        }
    }

    /// What a process of ours printed, for errors.
    public func log(_ name: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent("\(name).log"), encoding: .utf8)) ?? ""
    }

    private func seatHasPointer() throws -> Bool {
        let result = try Command.run("/usr/bin/swaymsg", ["--socket", swaySocket, "--raw", "-t", "get_seats"], timeout: 10)
        let seats = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [[String: Any]] ?? []
        // wl_seat's capability bits: 1 pointer, 2 keyboard.
        return seats.contains { (($0["capabilities"] as? Int) ?? 0) & 1 != 0 }
    }

    private static func outputSize(swaySocket: String) throws -> (Int, Int) {
        let result = try Command.run("/usr/bin/swaymsg", ["--socket", swaySocket, "--raw", "-t", "get_outputs"], timeout: 10)
        let outputs = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [[String: Any]] ?? []
        guard let rect = outputs.first(where: { ($0["active"] as? Bool) == true })?["rect"] as? [String: Any],
              let width = rect["width"] as? Int, let height = rect["height"] as? Int else {
            throw Failure(description: "sway named no active output: \(result)")
        }
        return (width, height)
    }

    private func swaymsg(_ arguments: [String]) throws {
        let result = try Command.run("/usr/bin/swaymsg", ["--socket", swaySocket] + arguments, timeout: 10)
        guard result.status == 0 else { throw Failure(description: "swaymsg \(arguments.joined(separator: " ")): \(result)") }
    }

    private func dbusSend(_ arguments: [String]) throws -> String {
        let result = try Command.run("/usr/bin/dbus-send", ["--session", "--print-reply=literal"] + arguments,
                                     environment: ["DBUS_SESSION_BUS_ADDRESS": environment["DBUS_SESSION_BUS_ADDRESS"] ?? ""], timeout: 10)
        guard result.status == 0 else { throw Failure(description: "dbus-send \(arguments.joined(separator: " ")): \(result)") }
        return result.stdout
    }

    /// Ends waybar and the pointer (sway's seat loses both). Safe to call more than once.
    public func stop() {
        for process in processes.reversed() { process.terminate(grace: 2) }
        processes = []
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
