import Foundation
import Logging
import ReplayDBus
import ReplaySystem
import Synchronization

/// The indicator as desktop notifications (org.freedesktop.Notifications, which GNOME, KDE,
/// dunst and mako serve): one that stays while a capture runs, with a Stop action, and a
/// short one when it ends.
///
/// sd-bus connections belong to one thread: this one owns its connection on a thread of its
/// own, which sends what is queued and hears the actions and closes, ten times a second.
final class DesktopNotifications: CaptureIndicator {
    private enum Request {
        case show(IndicatedCapture, stop: @Sendable () -> Void)
        case hide(String)
    }

    private struct Shown {
        let capture: IndicatedCapture
        let stop: @Sendable () -> Void
    }

    private let requests = Mutex<[Request]>([])
    private let stopping = StopFlag()
    private let logger: Logger
    private let finished = DispatchSemaphore(value: 0)

    /// Connects to `busAddress` (nil: this session's); nil when there is no bus or no
    /// notification server on it (the log says so once).
    init?(busAddress: String?, logger: Logger) {
        self.logger = logger
        let connection: DBusConnection
        let actions: DBusSubscription
        let closes: DBusSubscription
        do {
            connection = try DBusConnection(address: busAddress)
            actions = try connection.subscribe(path: Self.path, interface: Self.interface, member: "ActionInvoked")
            closes = try connection.subscribe(path: Self.path, interface: Self.interface, member: "NotificationClosed")
            _ = try connection.call(destination: Self.interface, path: Self.path, interface: Self.interface,
                                    member: "GetServerInformation", [], timeout: 2)
        } catch {
            logger.notice("no desktop notifications: captures are not announced (\(error))")
            return nil
        }
        let owned = UncheckedBox((connection, actions, closes))
        Thread.detachNewThread { [self] in
            run(connection: owned.value.0, actions: owned.value.1, closes: owned.value.2)
            finished.signal()
        }
    }

    func began(_ capture: IndicatedCapture, stop: @escaping @Sendable () -> Void) {
        requests.withLock { $0.append(.show(capture, stop: stop)) }
    }

    func ended(_ id: String) {
        requests.withLock { $0.append(.hide(id)) }
    }

    /// Sends what is queued (the ends too) and stops the thread.
    func close() {
        stopping.raise()
        _ = finished.wait(timeout: .now() + 3)
    }

    static let interface = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"

    private func run(connection: DBusConnection, actions: DBusSubscription, closes: DBusSubscription) {
        var shown: [UInt32: Shown] = [:]
        while true {
            let last = stopping.isRaised
            for request in requests.withLock({ queued in defer { queued = [] }; return queued }) {
                switch request {
                case .show(let capture, let stop):
                    if let id = notify(capture.summary, capture.body, actions: ["stop", "Stop", "default", "Stop"], resident: true,
                                       on: connection) {
                        shown[id] = Shown(capture: capture, stop: stop)
                    }
                case .hide(let captureID):
                    for (id, entry) in shown where entry.capture.id == captureID {
                        shown[id] = nil
                        _ = try? connection.call(destination: Self.interface, path: Self.path, interface: Self.interface,
                                                 member: "CloseNotification", [.uint32(id)], timeout: 2)
                        _ = notify(entry.capture.endedSummary, "", actions: [], resident: false, on: connection)
                    }
                }
            }
            if last { return }
            do {
                // ActionInvoked (id, action key): Stop, or a click (the default action), stops it.
                while let signal = try actions.next(timeout: 0.1) {
                    guard let id = signal.first?.uint32, let entry = shown[id] else { continue }
                    logger.info("stopped from the desktop's notification", metadata: ["capture": "\(entry.capture.id)"])
                    entry.stop()
                }
                // NotificationClosed (id, reason): dismissed; the capture goes on, unannounced.
                for signal in try closes.drain() {
                    if let id = signal.first?.uint32 { shown[id] = nil }
                }
            } catch {
                logger.warning("the desktop's notification service went away: captures are no longer announced (\(error))")
                return
            }
        }
    }

    /// Notify(app name, replaces id, icon, summary, body, actions, hints, timeout): the id.
    private func notify(_ summary: String, _ body: String, actions: [String], resident: Bool, on connection: DBusConnection) -> UInt32? {
        var hints: [String: DBusValue] = ["urgency": .byte(resident ? 1 : 0), "category": .string("device")]
        if resident { hints["resident"] = .bool(true) }
        let reply = try? connection.call(
            destination: Self.interface, path: Self.path, interface: Self.interface, member: "Notify",
            [.string("OpenReplayKit"), .uint32(0), .string(resident ? "media-record" : "media-playback-stop"), .string(summary),
             .string(body), .array(element: "s", actions.map { .string($0) }), .options(hints), .int32(resident ? 0 : 5000)],
            timeout: 2)
        return reply?.first?.uint32
    }
}
