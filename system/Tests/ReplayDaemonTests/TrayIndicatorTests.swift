import Foundation
import Logging
import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayDBus
import ReplayIPC
import ReplaySystem
import ReplayTesting
import Synchronization
import Testing

/// The tray icon on a real private bus (dbus-daemon), with the test as the desktop's tray: it
/// owns the watcher's name, takes the icon's registration, reads its menu and presses it.
@Suite struct TrayIndicatorTests {
    /// A private session bus: dbus-daemon on a socket of the test's, stopped with it.
    final class PrivateBus {
        let address: String
        private let directory: URL
        private let daemon: ChildProcess

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("ork-tray-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            address = "unix:path=\(directory.path)/bus"
            daemon = try ChildProcess(path: "/usr/bin/dbus-daemon", arguments: ["--session", "--address=\(address)", "--nofork"],
                                      environment: ChildProcess.environment(adding: [:]), stdout: .null, stderr: .null)
            guard poll(timeout: 5, every: 0.02, { UnixSocket.acceptsConnections(path: "\(self.directory.path)/bus") ? true : nil }) != nil else {
                daemon.terminate(grace: 1)
                throw DBusError(message: "the private bus did not start")
            }
        }

        deinit {
            daemon.terminate(grace: 1)
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// The desktop's tray as the icon meets it: the watcher's name, and the registrations it took.
    final class FakeTray {
        let connection: DBusConnection
        private(set) var items: [String] = []
        private var served: DBusObject?

        /// - Parameter hosting: it shows the items itself (waybar), or leaves that to another (KDE's kded).
        init(bus: PrivateBus, hosting: Bool = true) throws {
            connection = try DBusConnection(address: bus.address)
            try connection.requestName(TrayIndicator.watcher)
            if hosting { try connection.requestName("org.kde.StatusNotifierHost-\(getpid())-1") }
            served = try connection.serve(path: "/StatusNotifierWatcher") { [unowned self] call in
                guard call.member == "RegisterStatusNotifierItem", let name = call.arguments.first?.string else { return .unknownMethod(call) }
                items.append(name)
                return .reply([])
            }
        }

        /// Answers the bus until an icon has registered; its name.
        func awaitItem() throws -> String? {
            let deadline = Date().addingTimeInterval(10)
            while items.isEmpty && Date() < deadline { try connection.processOrWait(timeout: 0.5) }
            return items.last
        }

        func layout(of item: String) throws -> TrayMenuSeen {
            let reply = try connection.call(destination: item, path: TrayIndicator.menuPath, interface: TrayIndicator.menuInterface,
                                            member: "GetLayout", [.int32(0), .int32(-1), .array(element: "s", [])], timeout: 5)
            return TrayMenuSeen(reply)
        }
    }

    /// The labels and ids of a GetLayout reply's items.
    struct TrayMenuSeen {
        var items: [(id: Int32, label: String, enabled: Bool)] = []

        init(_ reply: [DBusValue]) {
            guard reply.count == 2, case .structure(let root) = reply[1], root.count == 3, case .array(_, let children) = root[2] else { return }
            for case .variant(.structure(let fields)) in children {
                guard case .int32(let id)? = fields.first, case .array(_, let entries)? = fields.dropFirst().first else { continue }
                var properties: [String: DBusValue] = [:]
                for case .dictEntry(.string(let key), .variant(let value)) in entries { properties[key] = value }
                guard let label = properties["label"]?.string else { continue }
                items.append((id, label, properties["enabled"] == .bool(true)))
            }
        }

        func id(of label: String) -> Int32? { items.first { $0.label == label }?.id }
    }

    static let recording = IndicatedCapture(id: "rec-1", kind: .recording, who: IndicatedCapture.person)

    @Test func withATrayTheCaptureIsAnIconWhoseMenuStopsIt() async throws {
        let bus = try PrivateBus()
        let tray = try FakeTray(bus: bus)
        let fallback = FakeIndicator()
        let indicator = TrayIndicator.connect(busAddress: bus.address, fallback: fallback, timers: DispatchTimers(), logger: Logger(label: "test"))
        #expect(indicator.reach.kind == .tray)
        let stopped = Completion<Void>()
        let paused = Mutex<[Bool]>([])
        indicator.began(Self.recording, controls: IndicatorControls(stop: { stopped.complete(()) }, setPaused: { flag in paused.withLock { $0.append(flag) } }))
        let item = try #require(try tray.awaitItem(), "the icon never registered")
        #expect(item.hasPrefix("org.kde.StatusNotifierItem-"))
        #expect(fallback.told.isEmpty, "the notification showed it too")

        let properties = try tray.connection.call(destination: item, path: TrayIndicator.itemPath, interface: "org.freedesktop.DBus.Properties",
                                                  member: "GetAll", [.string(TrayIndicator.itemInterface)], timeout: 5)
        guard case .array(_, let entries)? = properties.first else {
            Issue.record("no properties: \(properties)")
            return
        }
        let names = entries.compactMap { if case .dictEntry(.string(let key), _) = $0 { key } else { nil } }
        #expect(Set(["IconName", "Menu", "Status", "Title", "ToolTip"]).isSubset(of: Set(names)), "\(names)")

        let menu = try tray.layout(of: item)
        #expect(menu.items.map(\.label) == ["Recording the screen", "Pause", "Stop"], "\(menu.items)")
        #expect(menu.items.map(\.enabled) == [false, true, true])
        _ = try tray.connection.call(destination: item, path: TrayIndicator.menuPath, interface: TrayIndicator.menuInterface, member: "Event",
                                     [.int32(try #require(menu.id(of: "Pause"))), .string("clicked"), .variant(.int32(0)), .uint32(0)], timeout: 5)
        #expect(paused.withLock { $0 } == [true])

        // Paused (by whoever): the menu offers Resume.
        indicator.paused(Self.recording.id, true)
        let resumable = try #require(poll(timeout: 5, every: 0.05) { () -> TrayMenuSeen? in
            let seen = try? tray.layout(of: item)
            return seen?.id(of: "Resume") != nil ? seen : nil
        })
        _ = try tray.connection.call(destination: item, path: TrayIndicator.menuPath, interface: TrayIndicator.menuInterface, member: "Event",
                                     [.int32(try #require(resumable.id(of: "Stop"))), .string("clicked"), .variant(.int32(0)), .uint32(0)], timeout: 5)
        #expect(stopped.value != nil, "Stop did not stop the capture")

        // Ended: the icon's name goes, which takes it off the tray.
        indicator.ended(Self.recording.id)
        #expect(poll(timeout: 5, every: 0.05) { tray.connection.hasOwner(item) ? nil : true } == true, "the icon outlived its capture")
        await indicator.close()
    }

    /// An app on the same bus presses the menu's Stop and Resume: refused, and nothing happens.
    @Test func anAppCannotPressTheTraysMenu() async throws {
        let bus = try PrivateBus()
        let tray = try FakeTray(bus: bus)
        let indicator = TrayIndicator.connect(busAddress: bus.address, fallback: FakeIndicator(), timers: DispatchTimers(), logger: Logger(label: "test"))
        let pressed = Mutex(0)
        indicator.began(Self.recording, controls: IndicatorControls(stop: { pressed.withLock { $0 += 1 } }, setPaused: { _ in pressed.withLock { $0 += 1 } }))
        let item = try #require(try tray.awaitItem())
        let menu = try tray.layout(of: item)
        let app = try DBusConnection(address: bus.address)
        for label in ["Stop", "Pause"] {
            let id = try #require(menu.id(of: label))
            do {
                _ = try app.call(destination: item, path: TrayIndicator.menuPath, interface: TrayIndicator.menuInterface, member: "Event",
                                 [.int32(id), .string("clicked"), .variant(.int32(0)), .uint32(0)], timeout: 5)
                Issue.record("an app's click on \(label) was taken")
            } catch {
                #expect(error.name == "org.freedesktop.DBus.Error.AccessDenied", "\(error)")
            }
            let refused = try app.call(destination: item, path: TrayIndicator.menuPath, interface: TrayIndicator.menuInterface, member: "EventGroup",
                                       [.array(element: "(isvu)", [.structure([.int32(id), .string("clicked"), .variant(.int32(0)), .uint32(0)])])], timeout: 5)
            #expect(refused.first == .array(element: "i", [.int32(id)]))
        }
        #expect(pressed.withLock { $0 } == 0)
        await indicator.close()
    }

    /// No tray (GNOME): the capture goes to the notifications, and so does its end.
    @Test func withoutATrayTheNotificationsShowIt() async throws {
        let bus = try PrivateBus()
        let fallback = FakeIndicator()
        let indicator = TrayIndicator.connect(busAddress: bus.address, fallback: fallback, timers: DispatchTimers(), logger: Logger(label: "test"))
        #expect(indicator.reach.kind == .notifications)
        indicator.began(Self.recording, controls: IndicatorControls(stop: {}))
        indicator.ended(Self.recording.id)
        #expect(poll(timeout: 5, every: 0.05) { fallback.told.count == 2 ? true : nil } == true)
        #expect(fallback.told == [.began(Self.recording), .ended(Self.recording.id)])
        await indicator.close()
    }

    /// A watcher that shows no menu itself (KDE: kded watches, plasmashell shows): the menu's
    /// clicks cannot be told from an app's, so the notification shows the capture too.
    @Test func whereTheWatcherIsNotTheHostTheNotificationsShowItToo() async throws {
        let bus = try PrivateBus()
        let tray = try FakeTray(bus: bus, hosting: false)
        let fallback = FakeIndicator()
        let indicator = TrayIndicator.connect(busAddress: bus.address, fallback: fallback, timers: DispatchTimers(), logger: Logger(label: "test"))
        indicator.began(Self.recording, controls: IndicatorControls(stop: {}))
        #expect(try tray.awaitItem() != nil)
        #expect(poll(timeout: 5, every: 0.05) { fallback.told.isEmpty ? nil : true } == true)
        #expect(fallback.told == [.began(Self.recording)])
        indicator.ended(Self.recording.id)
        #expect(poll(timeout: 5, every: 0.05) { fallback.told.count == 2 ? true : nil } == true)
        await indicator.close()
    }

    @Test func theMenuListsEachCaptureWithItsOwnButtons() {
        let broadcast = IndicatedCapture(id: "b-1", kind: .broadcast(service: "RTMP"), who: "Secret Notes", paused: true)
        let menu = TrayMenu([(Self.recording, true), (broadcast, false)])
        #expect(menu.items.map(\.label) == ["Recording the screen", "Pause", "Stop", "", "Broadcasting the screen", "Stop"])
        #expect(menu.items[3].isSeparator && menu.properties(of: menu.items[3]) == ["type": .string("separator")])
        #expect(menu.items[5].action?.capture == "b-1" && menu.items[5].action?.action == .stop)
        #expect(Set(menu.items.map(\.id)).count == menu.items.count)
    }
}
