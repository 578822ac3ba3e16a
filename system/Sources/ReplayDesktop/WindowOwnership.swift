import CXCB
public import ReplayCaptureModel
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Answers "which process made this window?" from the X server's own record (X-Resource),
/// for the daemon's checks outside capture: an app may protect only its own windows.
/// Connects on first use (the display may come up after the daemon) and again after a loss.
public final class WindowOwnership: Sendable {
    private let displayName: String?
    private let connection = Mutex<Connection?>(nil)

    /// One X connection, used under the lock only.
    private final class Connection: @unchecked Sendable {
        let display: X11Display
        let stack: WindowStack
        init(display: X11Display, stack: WindowStack) {
            self.display = display
            self.stack = stack
        }
    }

    public init(displayName: String?) {
        self.displayName = displayName
    }

    /// The pid of the process whose X client made `window`; nil when there is no such window.
    public func ownerPID(of window: UInt32) throws(CaptureError) -> Int32? {
        try withConnection { $0.stack.ownerPID(of: window) }
    }

    /// The outermost window that contains `window` and is still `pid`'s: its top-level
    /// window, or under a window manager the application window inside the manager's frame.
    /// That is what capture masks by.
    public func outermostWindow(of window: UInt32, ownedBy pid: Int32) throws(CaptureError) -> UInt32 {
        try withConnection { connection in
            var current = window
            for _ in 0..<64 {
                let cookie = xcb_query_tree(connection.display.connection, current)
                guard let reply = xcb_query_tree_reply(connection.display.connection, cookie, nil) else { break }
                let parent = reply.pointee.parent
                free(reply)
                guard parent != connection.display.root, parent != 0, connection.stack.ownerPID(of: parent) == pid else { break }
                current = parent
            }
            return current
        }
    }

    /// The process owning the window with the input focus, if any.
    public func focusedProcess() throws(CaptureError) -> Int32? {
        try withConnection { connection in
            let cookie = xcb_get_input_focus(connection.display.connection)
            guard let reply = xcb_get_input_focus_reply(connection.display.connection, cookie, nil) else { return nil }
            defer { free(reply) }
            let focus = reply.pointee.focus
            guard focus != connection.display.root, focus > 1 else { return nil }
            return connection.stack.ownerPID(of: focus)
        }
    }

    private func withConnection<R>(_ body: (Connection) -> R) throws(CaptureError) -> R {
        try connection.withLock { (current: inout Connection?) throws(CaptureError) -> R in
            if let open = current, (try? open.display.checkConnection()) != nil { return body(open) }
            let display = try X11Display(name: displayName)
            let opened = Connection(display: display, stack: try WindowStack(display: display))
            current = opened
            return body(opened)
        }
    }
}
