import CXCB
#if canImport(Glibc)
import Glibc
#endif

/// What the X server told us while we waited.
enum X11Event: Equatable {
    case damaged
    case resized(width: Int, height: Int)
    case timedOut
}

/// A connection to an X server with the extensions screen capture needs: MIT-SHM to
/// copy pixels through shared memory, DAMAGE to learn when anything changed, XFIXES for
/// the cursor and RandR for size changes. The one place that speaks XCB for capture.
final class X11Display {
    let connection: OpaquePointer
    let root: xcb_window_t
    private(set) var width: Int
    private(set) var height: Int
    private let damage: xcb_damage_damage_t
    private let damageNotify: UInt8
    private let randrNotify: UInt8

    init(name: String?) throws(CaptureError) {
        var screenNumber: Int32 = 0
        let shownName = name ?? getenv("DISPLAY").map { String(cString: $0) } ?? "(DISPLAY is not set)"
        guard let connection = xcb_connect(name, &screenNumber) else {
            throw CaptureError(.noDisplay, "cannot connect to X display \(shownName)")
        }
        if xcb_connection_has_error(connection) != 0 {
            xcb_disconnect(connection)
            throw CaptureError(.noDisplay, "cannot connect to X display \(shownName): is an X server running there?")
        }
        self.connection = connection

        var roots = xcb_setup_roots_iterator(xcb_get_setup(connection))
        for _ in 0..<screenNumber { xcb_screen_next(&roots) }
        guard let screen = roots.data else {
            xcb_disconnect(connection)
            throw CaptureError(.noDisplay, "X display \(shownName) has no screen \(screenNumber)")
        }
        root = screen.pointee.root
        width = Int(screen.pointee.width_in_pixels)
        height = Int(screen.pointee.height_in_pixels)

        // Each extension must be asked for its version before use.
        free(xcb_shm_query_version_reply(connection, xcb_shm_query_version(connection), nil))
        free(xcb_damage_query_version_reply(connection, xcb_damage_query_version(connection, 1, 1), nil))
        free(xcb_xfixes_query_version_reply(connection, xcb_xfixes_query_version(connection, 4, 0), nil))
        free(xcb_randr_query_version_reply(connection, xcb_randr_query_version(connection, 1, 2), nil))
        for (index, extensionName) in ["MIT-SHM", "DAMAGE", "XFIXES", "RANDR"].enumerated()
        where CXCB_hasExtension(connection, Int32(index)) == 0 {
            xcb_disconnect(connection)
            throw CaptureError(.missingExtension, "the X server lacks the \(extensionName) extension")
        }

        damage = xcb_generate_id(connection)
        xcb_damage_create(connection, damage, root, UInt8(XCB_DAMAGE_REPORT_LEVEL_NON_EMPTY.rawValue))
        damageNotify = CXCB_damageFirstEvent(connection) + UInt8(XCB_DAMAGE_NOTIFY)
        randrNotify = CXCB_randrFirstEvent(connection) + UInt8(XCB_RANDR_SCREEN_CHANGE_NOTIFY)
        xcb_randr_select_input(connection, root, UInt16(XCB_RANDR_NOTIFY_MASK_SCREEN_CHANGE.rawValue))
        xcb_flush(connection)
    }

    deinit {
        xcb_damage_destroy(connection, damage)
        xcb_disconnect(connection)
    }

    func checkConnection() throws(CaptureError) {
        if xcb_connection_has_error(connection) != 0 {
            throw CaptureError(.connectionLost, "lost the connection to the X server")
        }
    }

    /// Asks the server for the screen's size now, for a grab refused before RandR's event
    /// came; a changed size is taken as current (its event, when it comes, is then no news)
    /// and returned.
    func refreshSize() -> (width: Int, height: Int)? {
        guard let reply = xcb_get_geometry_reply(connection, xcb_get_geometry(connection, root), nil) else { return nil }
        defer { free(reply) }
        let newWidth = Int(reply.pointee.width), newHeight = Int(reply.pointee.height)
        guard newWidth != width || newHeight != height else { return nil }
        width = newWidth
        height = newHeight
        return (newWidth, newHeight)
    }

    /// Re-arms damage reporting: drawing after this call is reported again.
    func clearDamage() {
        xcb_damage_subtract(connection, damage, xcb_xfixes_region_t(XCB_NONE), xcb_xfixes_region_t(XCB_NONE))
    }

    /// Waits for the next event that matters, or until `deadline` on the monotonic clock.
    func waitForEvent(until deadline: Int64, now: () -> Int64) throws(CaptureError) -> X11Event {
        while true {
            if let event = nextEvent(queuedOnly: true) { return event }
            let remaining = deadline - now()
            if remaining <= 0 { return .timedOut }
            var pollfd = Glibc.pollfd(fd: xcb_get_file_descriptor(connection), events: Int16(POLLIN), revents: 0)
            let timeout = Int32(min(max(remaining / 1_000_000, 1), 1000))
            _ = poll(&pollfd, 1, timeout)
            if let event = nextEvent(queuedOnly: false) { return event }
            try checkConnection()
        }
    }

    /// The next relevant event already received (or, with `queuedOnly` false, readable now).
    private func nextEvent(queuedOnly: Bool) -> X11Event? {
        while let event = queuedOnly ? xcb_poll_for_queued_event(connection) : xcb_poll_for_event(connection) {
            defer { free(event) }
            let type = CXCB_eventType(event)
            if type == damageNotify { return .damaged }
            if type == randrNotify {
                let change = UnsafeRawPointer(event).assumingMemoryBound(to: xcb_randr_screen_change_notify_event_t.self)
                var newWidth = Int(change.pointee.width), newHeight = Int(change.pointee.height)
                // A rotated screen reports its unrotated size.
                let rotation = UInt32(change.pointee.rotation)
                if rotation & UInt32(XCB_RANDR_ROTATION_ROTATE_90.rawValue | XCB_RANDR_ROTATION_ROTATE_270.rawValue) != 0 {
                    swap(&newWidth, &newHeight)
                }
                if newWidth != width || newHeight != height {
                    width = newWidth
                    height = newHeight
                    return .resized(width: newWidth, height: newHeight)
                }
            }
        }
        return nil
    }
}
