package import CXCB
package import ReplayCaptureModel
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// What the X server told us while we waited.
package enum X11Event: Equatable {
    case damaged
    case resized(width: Int, height: Int)
    case timedOut
}

/// Where a window is, if anywhere.
package enum WindowPlacement: Equatable {
    case shown(PixelRect)
    /// Unmapped (minimised, on another workspace) or an ancestor is.
    case hidden
    /// Destroyed, or never existed.
    case gone
}

/// A connection to an X server with the extensions screen capture needs: MIT-SHM to
/// copy pixels through shared memory, DAMAGE to learn when anything changed, XFIXES for
/// the cursor and RandR for size changes. The one place that speaks XCB for capture.
package final class X11Display {
    package let connection: OpaquePointer
    package let root: xcb_window_t
    package private(set) var width: Int
    package private(set) var height: Int
    private let damage: xcb_damage_damage_t
    private let damageNotify: UInt8
    private let randrNotify: UInt8

    package init(name: String?) throws(CaptureError) {
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
        // 1.5 for monitors; a server with less still answers with what it has.
        free(xcb_randr_query_version_reply(connection, xcb_randr_query_version(connection, 1, 5), nil))
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

    package func checkConnection() throws(CaptureError) {
        if xcb_connection_has_error(connection) != 0 {
            throw CaptureError(.connectionLost, "lost the connection to the X server")
        }
    }

    /// Asks the server for the screen's size now, for a grab refused before RandR's event
    /// came; a changed size is taken as current (its event, when it comes, is then no news)
    /// and returned.
    package func refreshSize() -> (width: Int, height: Int)? {
        guard let reply = xcb_get_geometry_reply(connection, xcb_get_geometry(connection, root), nil) else { return nil }
        defer { free(reply) }
        let newWidth = Int(reply.pointee.width), newHeight = Int(reply.pointee.height)
        guard newWidth != width || newHeight != height else { return nil }
        width = newWidth
        height = newHeight
        return (newWidth, newHeight)
    }

    /// The monitors RandR knows (1.5's monitors: outputs, or areas `xrandr --setmonitor`
    /// defined), in root coordinates; empty when the server has no such list.
    package func monitors() -> [MonitorListing] {
        guard let reply = xcb_randr_get_monitors_reply(connection, xcb_randr_get_monitors(connection, root, 1), nil) else {
            return []
        }
        defer { free(reply) }
        var infos: [(atom: xcb_atom_t, frame: PixelRect, primary: Bool)] = []
        var iterator = xcb_randr_get_monitors_monitors_iterator(reply)
        while iterator.rem > 0, let info = iterator.data {
            let m = info.pointee
            infos.append((m.name, PixelRect(x: Int(m.x), y: Int(m.y), width: Int(m.width), height: Int(m.height)), m.primary != 0))
            xcb_randr_monitor_info_next(&iterator)
        }
        let names = infos.map { xcb_get_atom_name(connection, $0.atom) }
        return zip(infos, names).map { info, cookie in
            var name = "monitor-\(info.atom)"
            if let reply = xcb_get_atom_name_reply(connection, cookie, nil) {
                let length = Int(xcb_get_atom_name_name_length(reply))
                if let text = xcb_get_atom_name_name(reply) {
                    name = String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)
                }
                free(reply)
            }
            return MonitorListing(name: name, frame: info.frame, isPrimary: info.primary)
        }
    }

    /// Where `window` shows now, in root coordinates (its inside: no border, no frame around
    /// it), or why not.
    package func placement(of window: xcb_window_t) -> WindowPlacement {
        let attributes = xcb_get_window_attributes(connection, window)
        let geometry = xcb_get_geometry(connection, window)
        let position = xcb_translate_coordinates(connection, window, root, 0, 0)
        let attributesReply = xcb_get_window_attributes_reply(connection, attributes, nil)
        let geometryReply = xcb_get_geometry_reply(connection, geometry, nil)
        let positionReply = xcb_translate_coordinates_reply(connection, position, nil)
        defer {
            free(attributesReply)
            free(geometryReply)
            free(positionReply)
        }
        guard let attributesReply, let geometryReply, let positionReply else { return .gone }
        guard attributesReply.pointee.map_state == UInt8(XCB_MAP_STATE_VIEWABLE.rawValue) else { return .hidden }
        return .shown(PixelRect(x: Int(positionReply.pointee.dst_x), y: Int(positionReply.pointee.dst_y),
                                width: Int(geometryReply.pointee.width), height: Int(geometryReply.pointee.height)))
    }

    /// Grabs the pointer and waits for the person to click (any button), up to `timeout`
    /// seconds; returns the top-level window clicked (a child of the root), nil for the root
    /// itself. Throws when the pointer cannot be grabbed or nobody clicked in time.
    package func pickTopLevelWindow(timeout: Double) throws(CaptureError) -> xcb_window_t? {
        // The cross-hair of the core cursor font says "choose".
        let font = xcb_generate_id(connection)
        xcb_open_font(connection, font, 6, "cursor")
        let cursor = xcb_generate_id(connection)
        let crosshair: UInt16 = 34
        xcb_create_glyph_cursor(connection, cursor, font, font, crosshair, crosshair + 1, 0, 0, 0, 0xffff, 0xffff, 0xffff)
        xcb_close_font(connection, font)
        defer {
            xcb_ungrab_pointer(connection, xcb_timestamp_t(XCB_CURRENT_TIME))
            xcb_free_cursor(connection, cursor)
            xcb_flush(connection)
        }
        let mask = UInt16(XCB_EVENT_MASK_BUTTON_PRESS.rawValue | XCB_EVENT_MASK_BUTTON_RELEASE.rawValue)
        let grab = xcb_grab_pointer_reply(connection, xcb_grab_pointer(
            connection, 0, root, mask, UInt8(XCB_GRAB_MODE_ASYNC.rawValue), UInt8(XCB_GRAB_MODE_ASYNC.rawValue),
            xcb_window_t(XCB_NONE), cursor, xcb_timestamp_t(XCB_CURRENT_TIME)), nil)
        let status = grab?.pointee.status
        free(grab)
        guard status == UInt8(XCB_GRAB_STATUS_SUCCESS.rawValue) else {
            throw CaptureError(.areaUnavailable, "cannot pick a window: another program holds the pointer")
        }
        let deadline = MonotonicClock.nanoseconds() + Int64(timeout * 1e9)
        while true {
            while let event = xcb_poll_for_event(connection) {
                defer { free(event) }
                guard CXCB_eventType(event) == UInt8(XCB_BUTTON_PRESS) else { continue }
                let press = UnsafeRawPointer(event).assumingMemoryBound(to: xcb_button_press_event_t.self)
                let child = press.pointee.child
                return child == xcb_window_t(XCB_NONE) ? nil : child
            }
            try checkConnection()
            let remaining = deadline - MonotonicClock.nanoseconds()
            guard remaining > 0 else {
                throw CaptureError(.areaUnavailable, "nobody clicked a window within \(Int(timeout)) s")
            }
            var pollfd = Glibc.pollfd(fd: xcb_get_file_descriptor(connection), events: Int16(POLLIN), revents: 0)
            _ = poll(&pollfd, 1, Int32(min(max(remaining / 1_000_000, 1), 1000)))
        }
    }

    /// Re-arms damage reporting: drawing after this call is reported again.
    package func clearDamage() {
        xcb_damage_subtract(connection, damage, xcb_xfixes_region_t(XCB_NONE), xcb_xfixes_region_t(XCB_NONE))
    }

    /// Waits for the next event that matters, or until `deadline` on the monotonic clock.
    package func waitForEvent(until deadline: Int64, now: () -> Int64) throws(CaptureError) -> X11Event {
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
