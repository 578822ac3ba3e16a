import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Logging
import ReplayCaptureModel
import ReplayDBus
import ReplayIPC
import ReplaySystem
import Synchronization

/// The indicator as a tray icon where the desktop hosts one (a StatusNotifierItem: KDE's
/// panel, waybar on sway), with a menu of what captures, Pause or Resume, and Stop; where no
/// tray is hosted when a capture begins (GNOME), that capture goes to `fallback` (the desktop's
/// notifications), as do short notices.
///
/// The icon is on screen while anything it shows captures: the item takes its bus name and
/// registers with the tray's watcher as the first capture begins, and gives the name back
/// as the last one ends (the host then removes it).
///
/// Any client of the session bus can call the menu's Event: only the connection that owns the
/// tray's watcher name (the desktop's tray: waybar is both watcher and host) is heeded; an
/// app's click on Stop or Resume is refused. Where the watcher is not also a host (KDE: kded
/// watches, plasmashell shows), the menu cannot be heeded, so the notifications show each
/// capture as well, with their Stop. Like `DesktopNotifications`, the connection is
/// used only on one serial queue, woken when the bus's socket has something for it.
final class TrayIndicator: CaptureIndicator, @unchecked Sendable {
    // @unchecked: everything but `hosted` and `watch` is touched only on `queue`.
    static let watcher = "org.kde.StatusNotifierWatcher"
    static let itemPath = "/StatusNotifierItem"
    static let menuPath = "/MenuBar"
    static let itemInterface = "org.kde.StatusNotifierItem"
    static let menuInterface = "com.canonical.dbusmenu"

    private let queue = DispatchQueue(label: "replayd.tray")
    private var connection: DBusConnection?
    private var objects: [DBusObject] = []
    /// The watcher's name changing hands: a tray that starts (or restarts) shows only the items
    /// that register after it, and one that goes takes every icon with it.
    private var owners: DBusSubscription?
    private let fallback: any CaptureIndicator
    private var shown: [(capture: IndicatedCapture, controls: IndicatorControls)] = []
    private var menu = TrayMenu([])
    private var revision: UInt32 = 1
    /// The item's bus name while the icon is shown, and the watcher's owner that took it.
    private var registered: (name: String, host: String)?
    /// The watcher's owner shows the menu itself (it owns a host's name): its clicks are heeded.
    private var menuHeeded = false
    private let hosted = Mutex(false)
    private let watch = Mutex<ReadableWatch?>(nil)
    private let logger: Logger
    private let timers: any Timers
    private let finished = Completion<Void>()

    /// The tray on `busAddress` (nil: this session's) in front of `fallback`; just `fallback`
    /// when there is no session bus to reach a tray on.
    static func connect(busAddress: String?, fallback: any CaptureIndicator, timers: any Timers, logger: Logger) -> any CaptureIndicator {
        do {
            return try TrayIndicator(busAddress: busAddress, fallback: fallback, timers: timers, logger: logger)
        } catch {
            logger.info("no tray icon for captures: \(error)")
            return fallback
        }
    }

    private init(busAddress: String?, fallback: any CaptureIndicator, timers: any Timers, logger: Logger) throws {
        self.fallback = fallback
        self.logger = logger
        self.timers = timers
        let connection = try DBusConnection(address: busAddress)
        objects = [
            try connection.serve(path: Self.itemPath) { [unowned self] in answerItem($0) },
            try connection.serve(path: Self.menuPath) { [unowned self] in answerMenu($0) },
        ]
        owners = try connection.subscribe(path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                          member: "NameOwnerChanged", sender: "org.freedesktop.DBus")
        self.connection = connection
        hosted.withLock { $0 = connection.hasOwner(Self.watcher) }
        let watch = ReadableWatch(descriptor: connection.descriptor, label: "tray", whenCancelled: { [self] in
            queue.async { [self] in
                objects.forEach { $0.cancel() }
                objects = []
                owners?.cancel()
                owners = nil
                self.connection = nil
                finished.complete(())
            }
        }) { [self] _ in
            queue.sync { process() }
        }
        self.watch.withLock { $0 = watch }
    }

    var reach: IndicatorStatus {
        hosted.withLock { $0 } ? IndicatorStatus(kind: .tray) : fallback.reach
    }

    func began(_ capture: IndicatedCapture, controls: IndicatorControls) {
        queue.async { [self] in
            guard let connection, connection.hasOwner(Self.watcher) else {
                hosted.withLock { $0 = false }
                return fallback.began(capture, controls: controls)
            }
            hosted.withLock { $0 = true }
            shown.append((capture, controls))
            if registered == nil { register(on: connection) } else { changed(on: connection) }
            if registered != nil && !menuHeeded { fallback.began(capture, controls: controls) }
            process()
        }
    }

    func paused(_ id: String, _ paused: Bool) {
        queue.async { [self] in
            // The notifications follow too: they show it where the menu is not heeded (else they know no such id).
            fallback.paused(id, paused)
            guard let index = shown.firstIndex(where: { $0.capture.id == id }), let connection else { return }
            shown[index].capture.paused = paused
            changed(on: connection)
        }
    }

    func ended(_ id: String) {
        queue.async { [self] in
            fallback.ended(id)
            guard let index = shown.firstIndex(where: { $0.capture.id == id }), let connection else { return }
            shown.remove(at: index)
            if shown.isEmpty { unregister(on: connection) } else { changed(on: connection) }
        }
    }

    func tell(_ notice: IndicatedNotice) { fallback.tell(notice) }

    /// Gives the icon back, then lets the bus go (waits up to 3 s), and closes the fallback.
    func close() async {
        queue.async { [self] in
            if let connection { unregister(on: connection) }
            watch.withLock { $0 }?.cancel()
        }
        _ = await finished.finished(within: 3, on: timers)
        await fallback.close()
    }

    // MARK: the icon on the bus

    /// Takes the item's name and registers it: the watcher's owner answers, and is the tray.
    private func register(on connection: DBusConnection) {
        let name = "org.kde.StatusNotifierItem-\(getpid())-1"
        menu = TrayMenu(shownForMenu)
        do {
            try connection.requestName(name)
            let reply = try connection.reply(destination: Self.watcher, path: "/StatusNotifierWatcher", interface: Self.watcher,
                                             member: "RegisterStatusNotifierItem", [.string(name)], timeout: 2)
            registered = (name, reply.sender)
            menuHeeded = connection.ownsHostName(reply.sender)
            logger.info(menuHeeded ? "captures are shown in the tray" : "captures are shown in the tray, and notified (its menu is another's)",
                        metadata: ["tray": "\(reply.sender)"])
        } catch {
            logger.warning("the tray did not take the capture's icon (\(error)); the desktop's notifications show it")
            connection.releaseName(name)
            for (capture, controls) in shown { fallback.began(capture, controls: controls) }
            shown = []
        }
    }

    private func unregister(on connection: DBusConnection) {
        guard let registered else { return }
        connection.releaseName(registered.name)
        self.registered = nil
    }

    /// The menu and the tooltip follow the captures.
    private func changed(on connection: DBusConnection) {
        menu = TrayMenu(shownForMenu)
        revision += 1
        try? connection.emit(path: Self.menuPath, interface: Self.menuInterface, member: "LayoutUpdated", [.uint32(revision), .int32(0)])
        try? connection.emit(path: Self.itemPath, interface: Self.itemInterface, member: "NewToolTip", [])
        try? connection.emit(path: Self.itemPath, interface: Self.itemInterface, member: "NewStatus", [.string(status)])
    }

    private var shownForMenu: [(capture: IndicatedCapture, pausable: Bool)] {
        shown.map { ($0.capture, $0.controls.setPaused != nil) }
    }

    /// Active while something captures; Passive (hosts may hide it) while everything is paused.
    private var status: String { shown.allSatisfy(\.capture.paused) ? "Passive" : "Active" }

    private func process() {
        do {
            try connection?.processAll()
            for change in try owners?.drainSignals() ?? [] where change.values.first?.string == Self.watcher {
                watcherChanged(to: change.values.dropFirst(2).first?.string ?? "")
            }
        } catch {
            logger.warning("the tray's bus connection broke: captures go to the desktop's notifications (\(error))")
            hosted.withLock { $0 = false }
            for (capture, controls) in shown { fallback.began(capture, controls: controls) }
            shown = []
            watch.withLock { $0 }?.cancel()
        }
    }

    /// A new tray is shown the icons again; with none, the notifications show the captures.
    private func watcherChanged(to owner: String) {
        guard let connection else { return }
        hosted.withLock { $0 = !owner.isEmpty }
        guard !shown.isEmpty else { return }
        unregister(on: connection)
        if owner.isEmpty {
            logger.info("the desktop's tray went away: the notifications show the captures")
            for (capture, controls) in shown { fallback.began(capture, controls: controls) }
            shown = []
        } else {
            register(on: connection)
        }
    }

    // MARK: what the tray asks

    private func answerItem(_ call: DBusMethodCall) -> DBusAnswer {
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            return .reply([.options(itemProperties)])
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard let name = call.arguments.dropFirst().first?.string, let value = itemProperties[name] else {
                return .error(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no such property")
            }
            return .reply([.variant(value)])
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return .reply([.string(Self.itemIntrospection)])
        case (Self.itemInterface, "Activate"), (Self.itemInterface, "SecondaryActivate"),
             (Self.itemInterface, "ContextMenu"), (Self.itemInterface, "Scroll"):
            // The menu is the host's to show; a click on the icon does nothing else.
            return .reply([])
        default:
            return .unknownMethod(call)
        }
    }

    private var itemProperties: [String: DBusValue] {
        let lines = shown.map { VisibleText.of($0.capture.body) }.joined(separator: "\n")
        let title = shown.count == 1 ? shown[0].capture.summary : "\(shown.count) captures of your screen"
        return [
            "Category": .string("ApplicationStatus"), "Id": .string("openreplaykit"), "Title": .string(title),
            "Status": .string(status), "WindowId": .int32(0), "IconName": .string("media-record"),
            "IconPixmap": Self.recordDot, "OverlayIconName": .string(""), "AttentionIconName": .string(""),
            "ToolTip": .structure([.string("media-record"), .array(element: "(iiay)", []), .string(title), .string(lines)]),
            "ItemIsMenu": .bool(true), "Menu": .objectPath(Self.menuPath),
        ]
    }

    private func answerMenu(_ call: DBusMethodCall) -> DBusAnswer {
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            return .reply([.options(Self.menuProperties)])
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard let name = call.arguments.dropFirst().first?.string, let value = Self.menuProperties[name] else {
                return .error(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no such property")
            }
            return .reply([.variant(value)])
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return .reply([.string(Self.menuIntrospection)])
        case (Self.menuInterface, "GetLayout"):
            return .reply([.uint32(revision), menu.layout()])
        case (Self.menuInterface, "GetGroupProperties"):
            let wanted = call.arguments.first.flatMap(Self.int32s) ?? []
            let items = menu.items.filter { wanted.isEmpty || wanted.contains($0.id) }
            return .reply([.array(element: "(ia{sv})", items.map { .structure([.int32($0.id), .options(menu.properties(of: $0))]) })])
        case (Self.menuInterface, "GetProperty"):
            guard case .int32(let id)? = call.arguments.first, let name = call.arguments.dropFirst().first?.string,
                  let item = menu.item(id), let value = menu.properties(of: item)[name] else {
                return .error(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "no such item or property")
            }
            return .reply([.variant(value)])
        case (Self.menuInterface, "Event"):
            guard case .int32(let id)? = call.arguments.first, call.arguments.dropFirst().first?.string == "clicked" else { return .reply([]) }
            return pressed(id, by: call.sender)
        case (Self.menuInterface, "EventGroup"):
            guard case .array(_, let events)? = call.arguments.first else { return .reply([.array(element: "i", [])]) }
            var refused: [DBusValue] = []
            for case .structure(let fields) in events {
                guard case .int32(let id)? = fields.first, fields.dropFirst().first?.string == "clicked" else { continue }
                if case .error = pressed(id, by: call.sender) { refused.append(.int32(id)) }
            }
            return .reply([.array(element: "i", refused)])
        case (Self.menuInterface, "AboutToShow"):
            return .reply([.bool(false)])
        case (Self.menuInterface, "AboutToShowGroup"):
            return .reply([.array(element: "i", []), .array(element: "i", [])])
        default:
            return .unknownMethod(call)
        }
    }

    /// A menu item clicked: heeded only from the tray that took the icon.
    private func pressed(_ id: Int32, by sender: String) -> DBusAnswer {
        guard let registered, sender == registered.host else {
            logger.warning("refused a click on the tray's menu from \(sender), which is not the desktop's tray")
            return .error(name: "org.freedesktop.DBus.Error.AccessDenied", message: "only the desktop's tray presses this menu")
        }
        guard let (captureID, action) = menu.item(id)?.action,
              let controls = shown.first(where: { $0.capture.id == captureID })?.controls else { return .reply([]) }
        switch action {
        case .stop:
            logger.info("stopped from the tray", metadata: ["capture": "\(captureID)"])
            controls.stop()
        case .pause, .resume:
            logger.info(action == .pause ? "paused from the tray" : "resumed from the tray", metadata: ["capture": "\(captureID)"])
            controls.setPaused?(action == .pause)
        }
        return .reply([])
    }

    private static func int32s(_ value: DBusValue) -> [Int32]? {
        guard case .array(_, let values) = value else { return nil }
        return values.compactMap { if case .int32(let id) = $0 { id } else { nil } }
    }

    private static let menuProperties: [String: DBusValue] = [
        "Version": .uint32(3), "TextDirection": .string("ltr"), "Status": .string("normal"), "IconThemePath": .array(element: "s", []),
    ]

    /// A red dot, 22 pixels across, for hosts without the icon theme's media-record (ARGB32, big-endian).
    private static let recordDot: DBusValue = {
        let size = 22
        var pixels: [DBusValue] = []
        pixels.reserveCapacity(size * size * 4)
        for y in 0..<size {
            for x in 0..<size {
                let dx = Double(x) - 10.5, dy = Double(y) - 10.5
                let inside = dx * dx + dy * dy <= 81
                pixels += [.byte(inside ? 255 : 0), .byte(inside ? 224 : 0), .byte(inside ? 27 : 0), .byte(inside ? 36 : 0)]
            }
        }
        return .array(element: "(iiay)", [.structure([.int32(Int32(size)), .int32(Int32(size)), .array(element: "y", pixels)])])
    }()

    private static let itemIntrospection = """
        <node><interface name="org.kde.StatusNotifierItem">
        <property name="Category" type="s" access="read"/><property name="Id" type="s" access="read"/>
        <property name="Title" type="s" access="read"/><property name="Status" type="s" access="read"/>
        <property name="WindowId" type="i" access="read"/><property name="IconName" type="s" access="read"/>
        <property name="IconPixmap" type="a(iiay)" access="read"/><property name="OverlayIconName" type="s" access="read"/>
        <property name="AttentionIconName" type="s" access="read"/><property name="ToolTip" type="(sa(iiay)ss)" access="read"/>
        <property name="ItemIsMenu" type="b" access="read"/><property name="Menu" type="o" access="read"/>
        <method name="ContextMenu"><arg name="x" type="i" direction="in"/><arg name="y" type="i" direction="in"/></method>
        <method name="Activate"><arg name="x" type="i" direction="in"/><arg name="y" type="i" direction="in"/></method>
        <method name="SecondaryActivate"><arg name="x" type="i" direction="in"/><arg name="y" type="i" direction="in"/></method>
        <method name="Scroll"><arg name="delta" type="i" direction="in"/><arg name="orientation" type="s" direction="in"/></method>
        <signal name="NewTitle"/><signal name="NewIcon"/><signal name="NewToolTip"/><signal name="NewStatus"><arg type="s"/></signal>
        </interface></node>
        """

    private static let menuIntrospection = """
        <node><interface name="com.canonical.dbusmenu">
        <property name="Version" type="u" access="read"/><property name="TextDirection" type="s" access="read"/>
        <property name="Status" type="s" access="read"/><property name="IconThemePath" type="as" access="read"/>
        <method name="GetLayout"><arg type="i" direction="in"/><arg type="i" direction="in"/><arg type="as" direction="in"/>
        <arg type="u" direction="out"/><arg type="(ia{sv}av)" direction="out"/></method>
        <method name="GetGroupProperties"><arg type="ai" direction="in"/><arg type="as" direction="in"/><arg type="a(ia{sv})" direction="out"/></method>
        <method name="GetProperty"><arg type="i" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>
        <method name="Event"><arg type="i" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="in"/><arg type="u" direction="in"/></method>
        <method name="EventGroup"><arg type="a(isvu)" direction="in"/><arg type="ai" direction="out"/></method>
        <method name="AboutToShow"><arg type="i" direction="in"/><arg type="b" direction="out"/></method>
        <method name="AboutToShowGroup"><arg type="ai" direction="in"/><arg type="ai" direction="out"/><arg type="ai" direction="out"/></method>
        <signal name="ItemsPropertiesUpdated"><arg type="a(ia{sv})"/><arg type="a(ias)"/></signal>
        <signal name="LayoutUpdated"><arg type="u"/><arg type="i"/></signal>
        </interface></node>
        """
}

extension DBusConnection {
    /// Whether the connection `uniqueName` owns a tray host's name (`org.kde.StatusNotifierHost-…`).
    func ownsHostName(_ uniqueName: String) -> Bool {
        guard case .array(_, let names)? = try? call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                     interface: "org.freedesktop.DBus", member: "ListNames", [], timeout: 2).first else { return false }
        return names.contains { name in
            guard let name = name.string, name.hasPrefix("org.kde.StatusNotifierHost-") else { return false }
            return owner(of: name) == uniqueName
        }
    }
}
