import CXCB
import FoundationEssentials
import Dispatch
public import ReplayCaptureModel
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// A key with modifiers, as people write it: "Ctrl+Alt+S", "Super+F9", "Shift+Print".
public struct KeyChord: Sendable, Equatable {
    /// X11 modifier bits: Shift 1, Control 4, Mod1 (Alt) 8, Mod4 (Super) 64.
    public let modifiers: UInt16
    /// The X keysym of the key itself (a lower-case letter's for letters).
    public let keysym: UInt32

    /// nil for anything it does not know, or a chord without a key.
    public init?(_ text: String) {
        let parts = text.split(separator: "+", omittingEmptySubsequences: false).map { $0.trimmingSpaces() }
        guard let key = parts.last, !key.isEmpty else { return nil }
        var modifiers: UInt16 = 0
        for name in parts.dropLast() {
            switch name.lowercased() {
            case "shift": modifiers |= 1
            case "ctrl", "control": modifiers |= 4
            case "alt", "mod1": modifiers |= 8
            case "super", "win", "meta", "mod4": modifiers |= 64
            default: return nil
            }
        }
        guard let keysym = Self.keysym(key) else { return nil }
        self.modifiers = modifiers
        self.keysym = keysym
    }

    private static func keysym(_ key: String) -> UInt32? {
        let lower = key.lowercased()
        if lower.count == 1, let scalar = lower.unicodeScalars.first, ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) {
            return scalar.value
        }
        if lower.hasPrefix("f"), let number = UInt32(lower.dropFirst()), (1...24).contains(number) { return 0xffbe + number - 1 }
        let named: [String: UInt32] = ["space": 0x20, "print": 0xff61, "pause": 0xff13, "scrolllock": 0xff14, "insert": 0xff63,
                                       "home": 0xff50, "end": 0xff57, "pageup": 0xff55, "pagedown": 0xff56]
        return named[lower]
    }
}

/// A global key on an X screen: the key with its modifiers is grabbed on the root window
/// (whatever NumLock and CapsLock say), so pressing it anywhere calls `onPress` instead of
/// reaching the focused window. Ends with `release()` or deinit.
public final class HotkeyGrab: @unchecked Sendable {
    // @unchecked: the connection is used by the listening thread and by `release`, which
    // first stops that thread and waits for it.
    private let connection: OpaquePointer
    private let root: xcb_window_t
    private let keycode: xcb_keycode_t
    private let modifiers: UInt16
    private let stop = StopFlag()
    private let stopped = DispatchSemaphoreBox()

    /// Grabs `chord` on `displayName`'s screen; throws when the key is unknown to the keyboard
    /// map or another program holds the same grab.
    public init(_ chord: KeyChord, displayName: String?, onPress: @escaping @Sendable () -> Void) throws(CaptureError) {
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(displayName, &screenNumber), xcb_connection_has_error(connection) == 0 else {
            throw CaptureError(.noDisplay, "cannot connect to the X display for the hotkey")
        }
        var roots = xcb_setup_roots_iterator(xcb_get_setup(connection))
        for _ in 0..<screenNumber { xcb_screen_next(&roots) }
        guard let screen = roots.data, let keycode = Self.keycode(of: chord.keysym, connection) else {
            xcb_disconnect(connection)
            throw CaptureError(.hotkeyUnavailable, "the keyboard has no key for that hotkey")
        }
        self.connection = connection
        root = screen.pointee.root
        self.keycode = keycode
        modifiers = chord.modifiers
        // The same chord with CapsLock (Lock, 2) and NumLock (Mod2, 16) on or off.
        for locks: UInt16 in [0, 2, 16, 18] {
            let cookie = xcb_grab_key_checked(connection, 1, root, modifiers | locks, keycode,
                                              UInt8(XCB_GRAB_MODE_ASYNC.rawValue), UInt8(XCB_GRAB_MODE_ASYNC.rawValue))
            if let error = xcb_request_check(connection, cookie) {
                free(error)
                xcb_disconnect(connection)
                throw CaptureError(.hotkeyUnavailable, "another program already uses that key combination")
            }
        }
        let stop = self.stop, stopped = self.stopped, wanted = keycode
        let fd = xcb_get_file_descriptor(connection)
        // The listening thread owns the connection until `release` has stopped it.
        let owned = UncheckedConnection(connection)
        Threads.detach {
            let connection = owned.pointer
            defer { stopped.signal() }
            while !stop.isRaised {
                var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&pollfd, 1, 200)
                while let event = xcb_poll_for_event(connection) {
                    defer { free(event) }
                    guard CXCB_eventType(event) == UInt8(XCB_KEY_PRESS) else { continue }
                    let press = UnsafeRawPointer(event).assumingMemoryBound(to: xcb_key_press_event_t.self)
                    if press.pointee.detail == wanted { onPress() }
                }
                if xcb_connection_has_error(connection) != 0 { return }
            }
        }
    }

    deinit { release() }

    /// Ungrabs the key and closes the connection (once).
    public func release() {
        guard !stop.isRaised else { return }
        stop.raise()
        stopped.wait()
        for locks: UInt16 in [0, 2, 16, 18] { xcb_ungrab_key(connection, keycode, root, modifiers | locks) }
        xcb_flush(connection)
        xcb_disconnect(connection)
    }

    /// The first keycode whose keyboard mapping holds `keysym`.
    private static func keycode(of keysym: UInt32, _ connection: OpaquePointer) -> xcb_keycode_t? {
        let setup = xcb_get_setup(connection).pointee
        let first = setup.min_keycode, count = UInt8(Int(setup.max_keycode) - Int(setup.min_keycode) + 1)
        guard let reply = xcb_get_keyboard_mapping_reply(connection, xcb_get_keyboard_mapping(connection, first, count), nil) else {
            return nil
        }
        defer { free(reply) }
        let perCode = Int(reply.pointee.keysyms_per_keycode)
        guard perCode > 0, let symbols = xcb_get_keyboard_mapping_keysyms(reply) else { return nil }
        let total = Int(xcb_get_keyboard_mapping_keysyms_length(reply))
        for index in 0..<total where symbols[index] == keysym {
            return xcb_keycode_t(Int(first) + index / perCode)
        }
        return nil
    }
}

/// An XCB connection handed to the one thread that uses it.
private struct UncheckedConnection: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

/// A semaphore a `Sendable` closure can hold.
private final class DispatchSemaphoreBox: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func signal() { semaphore.signal() }
    func wait() { semaphore.wait() }
}
