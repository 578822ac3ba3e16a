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

/// The indicator as desktop notifications (org.freedesktop.Notifications, which GNOME, KDE,
/// dunst and mako serve): one that stays while a capture runs, with Pause or Resume and Stop
/// actions, replaced in place when it is paused or resumed; a short one when it ends, and
/// short notices (a clip saved by the hotkey).
///
/// sd-bus connections belong to one thread at a time: this one's connection is used only on
/// its serial queue, which sends each request as it comes, and hears the actions and closes
/// when the bus's socket has something for it (a `ReadableWatch`). No thread waits and no
/// timer ticks while nothing happens.
final class DesktopNotifications: CaptureIndicator, @unchecked Sendable {
    // @unchecked: `bus` and `shown` are touched only on `queue`.
    private enum Request {
        case show(IndicatedCapture, IndicatorControls)
        case paused(String, Bool)
        case hide(String)
        case tell(IndicatedNotice)
    }

    /// What a notification on screen stands for.
    private enum Shown {
        case capture(IndicatedCapture, IndicatorControls)
        case notice(IndicatedNotice)
    }

    /// A notification as the server that showed it knows it. Any client of the session bus can
    /// send an ActionInvoked signal naming any id: only the connection that answered Notify
    /// with this id speaks for it.
    private struct ShownID: Hashable {
        /// The unique bus name that sent Notify's reply.
        let server: String
        let id: UInt32
    }

    /// The connection and its two subscriptions: ActionInvoked and NotificationClosed.
    private struct Bus {
        let connection: DBusConnection
        let actions: DBusSubscription
        let closes: DBusSubscription
    }

    private let queue = DispatchQueue(label: "replayd.notifications")
    /// Nil once closed, or once the notification service went away.
    private var bus: Bus?
    private var shown: [ShownID: Shown] = [:]
    private let watch = Mutex<ReadableWatch?>(nil)
    /// Why the notification service is no longer reached, once it went away.
    private let lost = Mutex<String?>(nil)
    private let logger: Logger
    private let timers: any Timers
    private let finished = Completion<Void>()

    /// Desktop notifications on `busAddress` (nil: this session's), or no indicator, saying why,
    /// when there is no bus or no notification server on it (the log warns once).
    static func connect(busAddress: String?, timers: any Timers, logger: Logger) -> any CaptureIndicator {
        do {
            return try DesktopNotifications(busAddress: busAddress, timers: timers, logger: logger)
        } catch {
            logger.warning("no desktop notifications: captures are not announced (\(error))")
            return NoCaptureIndicator(reason: "no desktop notification server: \(error)")
        }
    }

    private init(busAddress: String?, timers: any Timers, logger: Logger) throws {
        self.logger = logger
        self.timers = timers
        let connection = try DBusConnection(address: busAddress)
        // The bus delivers only the name owner's broadcasts; signals sent straight to this
        // connection are checked against the server that showed the notification (`hear`).
        let actions = try connection.subscribe(path: Self.path, interface: Self.interface, member: "ActionInvoked", sender: Self.interface)
        let closes = try connection.subscribe(path: Self.path, interface: Self.interface, member: "NotificationClosed", sender: Self.interface)
        _ = try connection.call(destination: Self.interface, path: Self.path, interface: Self.interface,
                                member: "GetServerInformation", [], timeout: 2)
        bus = Bus(connection: connection, actions: actions, closes: closes)
        // The socket is sd-bus's own: the connection closes it once let go, after the watch.
        let watch = ReadableWatch(descriptor: connection.descriptor, label: "notifications", whenCancelled: { [self] in
            queue.async { [self] in
                bus = nil
                shown = [:]
                finished.complete(())
            }
        }) { [self] _ in
            queue.sync { hear() }
        }
        self.watch.withLock { $0 = watch }
    }

    var reach: IndicatorStatus {
        lost.withLock { $0 }.map { IndicatorStatus(kind: .none, reason: $0) } ?? IndicatorStatus(kind: .notifications)
    }

    func began(_ capture: IndicatedCapture, controls: IndicatorControls) { send(.show(capture, controls)) }

    func paused(_ id: String, _ paused: Bool) { send(.paused(id, paused)) }

    func ended(_ id: String) { send(.hide(id)) }

    func tell(_ notice: IndicatedNotice) { send(.tell(notice)) }

    /// Sends what is queued (the ends too), then lets the bus go: waits for that up to 3 s.
    func close() async {
        queue.async { [self] in watch.withLock { $0 }?.cancel() }
        _ = await finished.finished(within: 3, on: timers)
    }

    static let interface = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"

    /// Sends `request` in turn, then hears what the bus kept meanwhile (a call reads the
    /// signals that come before its reply).
    private func send(_ request: Request) {
        queue.async { [self] in
            guard let connection = bus?.connection else { return }
            handle(request, on: connection)
            hear()
        }
    }

    private func handle(_ request: Request, on connection: DBusConnection) {
        switch request {
        case .show(let capture, let controls):
            if let id = notify(capture, controls, on: connection) { shown[id] = .capture(capture, controls) }
        case .paused(let captureID, let paused):
            // The same notification, replaced: its text and its Pause/Resume action follow.
            for case (let id, .capture(var capture, let controls)) in shown where capture.id == captureID && capture.paused != paused {
                capture.paused = paused
                if let replaced = notify(capture, controls, replacing: id, on: connection) {
                    shown[id] = nil
                    shown[replaced] = .capture(capture, controls)
                }
            }
        case .hide(let captureID):
            for case (let id, .capture(let capture, _)) in shown where capture.id == captureID {
                shown[id] = nil
                _ = try? connection.call(destination: id.server, path: Self.path, interface: Self.interface,
                                         member: "CloseNotification", [.uint32(id.id)], timeout: 2)
                _ = notify(capture.endedSummary, "", actions: [], resident: false, on: connection)
            }
        case .tell(let notice):
            // Long enough to reach for its button.
            if let id = notify(notice.summary, notice.body, actions: notice.actions, resident: false, timeout: 10_000, on: connection),
               notice.action != nil {
                shown[id] = .notice(notice)
            }
        }
    }

    /// Reads every signal that has come: actions are acted on, closes forgotten. A bus that
    /// broke ends the notifications (captures go on, unannounced).
    private func hear() {
        guard let bus else { return }
        do {
            // ActionInvoked (id, action key), heeded only from the server that showed that id.
            for signal in try bus.actions.drainSignals() {
                guard let number = signal.values.first?.uint32 else { continue }
                let id = ShownID(server: signal.sender, id: number)
                guard let entry = shown[id] else { continue }
                act(on: entry, key: signal.values.dropFirst().first?.string ?? "default")
                if case .notice = entry { shown[id] = nil }
            }
            // NotificationClosed (id, reason): dismissed; the capture goes on, unannounced.
            for signal in try bus.closes.drainSignals() {
                if let number = signal.values.first?.uint32 { shown[ShownID(server: signal.sender, id: number)] = nil }
            }
        } catch {
            logger.warning("the desktop's notification service went away: captures are no longer announced (\(error))")
            lost.withLock { $0 = "the desktop's notification service went away: \(error)" }
            watch.withLock { $0 }?.cancel()
        }
    }

    /// Pause, Resume, Stop or a click (which stops a capture, or runs a notice's action).
    private func act(on entry: Shown, key: String) {
        switch entry {
        case .capture(let capture, let controls):
            switch key {
            case IndicatedAction.pause.key, IndicatedAction.resume.key:
                guard let setPaused = controls.setPaused else { return }
                logger.info(key == "pause" ? "paused from the desktop's notification" : "resumed from the desktop's notification",
                            metadata: ["capture": "\(capture.id)"])
                setPaused(key == "pause")
            default:
                logger.info("stopped from the desktop's notification", metadata: ["capture": "\(capture.id)"])
                controls.stop()
            }
        case .notice(let notice):
            notice.action?.run()
        }
    }

    private func notify(_ capture: IndicatedCapture, _ controls: IndicatorControls, replacing: ShownID? = nil,
                        on connection: DBusConnection) -> ShownID? {
        notify(capture.summary, capture.body, actions: capture.actions(pausable: controls.setPaused != nil), resident: true,
               replacing: replacing, on: connection)
    }

    /// The body as plain text: control characters shown, and the markup characters a server
    /// may interpret (`<a href>`, `<img>`) escaped, so an app's name is shown as it is named.
    static func plainBody(_ body: String) -> String {
        VisibleText.of(body).replacing("&", with: "&amp;").replacing("<", with: "&lt;")
            .replacing(">", with: "&gt;")
    }

    /// Notify(app name, replaces id, icon, summary, body, actions, hints, timeout): the id, with
    /// the server that answered. A resident one stays until closed; another goes after `timeout` milliseconds.
    private func notify(_ summary: String, _ body: String, actions: [IndicatedAction], resident: Bool, timeout: Int32 = 5000,
                        replacing: ShownID? = nil, on connection: DBusConnection) -> ShownID? {
        var hints: [String: DBusValue] = ["urgency": .byte(resident ? 1 : 0), "category": .string("device")]
        if resident { hints["resident"] = .bool(true) }
        let reply = try? connection.reply(
            destination: Self.interface, path: Self.path, interface: Self.interface, member: "Notify",
            [.string("OpenReplayKit"), .uint32(replacing?.id ?? 0), .string(resident ? "media-record" : "media-playback-stop"), .string(VisibleText.of(summary)),
             .string(Self.plainBody(body)), .array(element: "s", actions.flatMap { [DBusValue.string($0.key), .string($0.label)] }), .options(hints),
             .int32(resident ? 0 : timeout)],
            timeout: 2)
        guard let reply, let id = reply.values.first?.uint32 else { return nil }
        return ShownID(server: reply.sender, id: id)
    }
}
