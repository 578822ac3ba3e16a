import CXCB
public import ReplayCaptureModel
#if canImport(Glibc)
import Glibc
#endif

/// A top-level window as it is stacked on the screen.
public struct StackedWindow: Equatable, Sendable {
    /// The child of the root window: under a reparenting window manager, the manager's frame.
    public let id: UInt32
    /// The window the application created inside the frame (the one carrying ICCCM's
    /// WM_STATE), which is what an application names when it asks for protection; `id` itself
    /// when nothing reparented it.
    public let clientWindow: UInt32
    /// Root coordinates, border and window-manager decorations included, clipped to the screen.
    public let frame: PixelRect
    /// The process of the X client that created `clientWindow`, as the X server knows it
    /// (XRes): nil for clients over TCP and windows of the server itself.
    public let ownerPID: Int32?
    /// False for windows with an alpha channel (depth 32): a compositor blends them with
    /// what lies beneath, so they cannot be trusted to hide it.
    public let isOpaque: Bool
    /// Windows inside this one that another process's client made (any client may reparent
    /// any window into its own): their frames in root coordinates. Read only for the windows
    /// of the process an in-app capture keeps.
    public var foreignParts: [PixelRect]

    public init(id: UInt32, clientWindow: UInt32? = nil, frame: PixelRect, ownerPID: Int32?, isOpaque: Bool = true,
                foreignParts: [PixelRect] = []) {
        self.id = id
        self.clientWindow = clientWindow ?? id
        self.frame = frame
        self.ownerPID = ownerPID
        self.isOpaque = isOpaque
        self.foreignParts = foreignParts
    }
}

/// The windows on the screen and the processes that own them, from the server's own
/// records: the X-Resource extension (1.2) tells which process is behind each client
/// connection (its peer credentials), whereas _NET_WM_PID is whatever a client wrote.
/// Every query sends a whole batch of requests before reading any reply, so a call costs a
/// few round trips however many windows there are.
package final class WindowStack {
    private let display: X11Display
    /// Which bits of an X id are the per-client part; the rest names the client.
    private let resourceIDMask: UInt32
    /// Set by window managers on the windows they manage, which tells an application's
    /// window from the frame wrapped around it.
    private let wmState: xcb_atom_t
    /// EWMH's UTF-8 window title.
    private let netWMName: xcb_atom_t

    package init(display: X11Display) throws(CaptureError) {
        let connection = display.connection
        let missing = CaptureError(
            .missingExtension, "the X server lacks the X-Resource 1.2 extension needed to tell windows apart")
        guard CXCB_hasExtension(connection, 4) != 0,
              let version = xcb_res_query_version_reply(connection, xcb_res_query_version(connection, 1, 2), nil)
        else { throw missing }
        let (major, minor) = (version.pointee.server_major, version.pointee.server_minor)
        free(version)
        guard (major, minor) >= (1, 2) else { throw missing }

        self.display = display
        resourceIDMask = xcb_get_setup(connection).pointee.resource_id_mask
        let atoms = ["WM_STATE", "_NET_WM_NAME"].map { (name: String) in
            xcb_intern_atom(connection, 0, UInt16(name.utf8.count), name)
        }.map { cookie in
            let reply = xcb_intern_atom_reply(connection, cookie, nil)
            defer { free(reply) }
            return reply?.pointee.atom ?? xcb_atom_t(XCB_ATOM_NONE.rawValue)
        }
        wmState = atoms[0]
        netWMName = atoms[1]
    }

    /// The viewable top-level windows that show on the screen, bottom to top; for those of
    /// process `keeping`, also the windows inside them that other processes made.
    package func windows(keeping pid: Int32? = nil) -> [StackedWindow] {
        let connection = display.connection
        let clientsCookie = queryPIDs(of: 0)
        let topLevels = probe([display.root]).first?.children ?? []
        let pids = readPIDs(connection, clientsCookie)
        let screen = PixelRect(x: 0, y: 0, width: display.width, height: display.height)
        let tops = probe(topLevels)
        let clients = clientWindows(of: tops)
        return tops.indices.compactMap { index -> StackedWindow? in
            let top = tops[index]
            // The server's own windows belong to no app, and the one that covers the screen under a
            // compositor (its overlay) shows the other windows rather than hiding them.
            guard top.isViewable, let geometry = top.geometry, owner(top.id) != 0 else { return nil }
            let frame = geometry.frame.intersection(screen)
            guard !frame.isEmpty else { return nil }
            let client = clients[index] ?? top.id
            let ownerPID = pids[owner(client)]
            return StackedWindow(
                id: top.id, clientWindow: client, frame: frame, ownerPID: ownerPID, isOpaque: geometry.depth != 32,
                foreignParts: pid != nil && ownerPID == pid ? foreignDescendants(of: top, at: geometry.frame, keeping: pid!, pids: pids) : [])
        }
    }

    /// Frames (root coordinates) of the viewable windows inside `top` whose client is not of
    /// process `pid`, or whose process is unknown. Ownership is per window: a window another
    /// client made and somebody reparented into the app's tree is not the app's. Past
    /// `maximumWindows` or `maximumDepth` the whole of `top` counts as foreign (failing closed).
    private func foreignDescendants(of top: Probe, at frame: PixelRect, keeping pid: Int32, pids: [UInt32: Int32]) -> [PixelRect] {
        let maximumWindows = 512, maximumDepth = 8
        var foreign: [PixelRect] = []
        // Each window to look at, with the root coordinates of its parent's inside corner.
        let border = top.geometry?.border ?? 0
        var level = top.children.map { (window: $0, originX: frame.x + border, originY: frame.y + border) }
        var seen = 0
        for _ in 0..<maximumDepth where !level.isEmpty {
            seen += level.count
            guard seen <= maximumWindows else { return [frame] }
            let probes = probe(level.map(\.window))
            var next: [(window: UInt32, originX: Int, originY: Int)] = []
            for (entry, child) in zip(level, probes) where child.isViewable {
                guard let geometry = child.geometry else { continue }
                let childFrame = PixelRect(x: entry.originX + geometry.frame.x, y: entry.originY + geometry.frame.y,
                                           width: geometry.frame.width, height: geometry.frame.height)
                if pids[owner(child.id)] != pid {
                    // Everything inside a foreign window is hidden with it.
                    foreign.append(childFrame)
                    continue
                }
                next += child.children.map { ($0, childFrame.x + geometry.border, childFrame.y + geometry.border) }
            }
            level = next
        }
        return level.isEmpty ? foreign : [frame]
    }

    /// Each window's title (_NET_WM_NAME, else WM_NAME) and application (WM_CLASS's class
    /// part), read from its application window in one batch; "" where it sets none.
    package func names(of windows: [StackedWindow]) -> [(title: String, application: String)] {
        let connection = display.connection
        let anyType = xcb_atom_t(XCB_ATOM_ANY.rawValue)
        let cookies = windows.map { window in
            (modern: xcb_get_property(connection, 0, window.clientWindow, netWMName, anyType, 0, 1024),
             legacy: xcb_get_property(connection, 0, window.clientWindow, xcb_atom_t(XCB_ATOM_WM_NAME.rawValue), anyType, 0, 1024),
             wmClass: xcb_get_property(connection, 0, window.clientWindow, xcb_atom_t(XCB_ATOM_WM_CLASS.rawValue), anyType, 0, 1024))
        }
        return cookies.map { cookie in
            let modern = text(xcb_get_property_reply(connection, cookie.modern, nil))
            let legacy = text(xcb_get_property_reply(connection, cookie.legacy, nil))
            // WM_CLASS is "instance\0Class\0": the class names the application.
            let wmClass = text(xcb_get_property_reply(connection, cookie.wmClass, nil)).split(separator: "\0")
            return (modern.isEmpty ? legacy : modern, wmClass.count > 1 ? String(wmClass[1]) : wmClass.first.map(String.init) ?? "")
        }
    }

    /// A string property's bytes as UTF-8 (Latin-1 titles show their ASCII right); frees the reply.
    private func text(_ reply: UnsafeMutablePointer<xcb_get_property_reply_t>?) -> String {
        guard let reply else { return "" }
        defer { free(reply) }
        guard reply.pointee.format == 8, let value = xcb_get_property_value(reply) else { return "" }
        let length = Int(xcb_get_property_value_length(reply))
        return String(decoding: UnsafeRawBufferPointer(start: value, count: length), as: UTF8.self)
    }

    /// The process of the client that created `window` (top-level or not), or nil if the
    /// window does not exist, is the server's own (XRes names the server's pid for those), or
    /// the server does not know the process (a client over TCP).
    package func ownerPID(of window: UInt32) -> Int32? {
        let connection = display.connection
        guard owner(window) != 0 else { return nil }
        let exists = xcb_get_window_attributes(connection, window)
        let cookie = queryPIDs(of: window)
        let attributes = xcb_get_window_attributes_reply(connection, exists, nil)
        let pids = readPIDs(connection, cookie)
        guard let attributes else { return nil }
        free(attributes)
        return pids[owner(window)]
    }

    /// The client part of an X id: the resource-id base of the client that allocated it.
    private func owner(_ window: UInt32) -> UInt32 { window & ~resourceIDMask }

    /// Asks which process is behind the client owning `id`, or behind every client for 0.
    private func queryPIDs(of id: UInt32) -> xcb_res_query_client_ids_cookie_t {
        var spec = xcb_res_client_id_spec_t(client: id, mask: UInt32(XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID.rawValue))
        return xcb_res_query_client_ids(display.connection, 1, &spec)
    }

    /// Process ids by client resource-id base; clients whose process is unknown are absent.
    private func readPIDs(_ connection: OpaquePointer, _ cookie: xcb_res_query_client_ids_cookie_t) -> [UInt32: Int32] {
        guard let reply = xcb_res_query_client_ids_reply(connection, cookie, nil) else { return [:] }
        defer { free(reply) }
        var pids: [UInt32: Int32] = [:]
        var values = xcb_res_query_client_ids_ids_iterator(reply)
        while values.rem > 0, let value = values.data {
            if value.pointee.spec.mask & UInt32(XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID.rawValue) != 0,
               xcb_res_client_id_value_value_length(value) >= 1, let pid = xcb_res_client_id_value_value(value) {
                pids[value.pointee.spec.client] = Int32(bitPattern: pid.pointee)
            }
            xcb_res_client_id_value_next(&values)
        }
        return pids
    }

    /// For each top-level window, the application window inside it, found as `xprop` does:
    /// the top-level itself if it carries WM_STATE, else the first viewable child or
    /// grandchild that does (frames nest the application's window one or two levels down).
    /// Nil when none does, as without a window manager.
    private func clientWindows(of tops: [Probe]) -> [UInt32?] {
        var found: [UInt32?] = tops.map { $0.isViewable && $0.hasWMState ? $0.id : nil }
        // Each window still to look at, with the index of the top-level it descends from.
        var candidates = tops.indices.filter { found[$0] == nil && tops[$0].isViewable }
            .flatMap { index in tops[index].children.map { (top: index, window: $0) } }
        for _ in 1...2 where !candidates.isEmpty {
            let probes = probe(candidates.map(\.window))
            for (candidate, probe) in zip(candidates, probes)
            where found[candidate.top] == nil && probe.isViewable && probe.hasWMState {
                found[candidate.top] = probe.id
            }
            candidates = zip(candidates, probes).flatMap { candidate, probe in
                found[candidate.top] == nil && probe.isViewable ? probe.children.map { (candidate.top, $0) } : []
            }
        }
        return found
    }

    /// What one window is, read in one batch for a whole list of windows.
    private struct Probe {
        let id: UInt32
        /// Mapped with all its ancestors, and drawing pixels (not InputOnly).
        var isViewable = false
        var hasWMState = false
        var children: [UInt32] = []
        var geometry: (frame: PixelRect, depth: UInt8, border: Int)?
    }

    /// Attributes, geometry, WM_STATE and children of every window in `windows`: all the
    /// requests go out before the first reply is read. A window destroyed meanwhile comes
    /// back not viewable.
    private func probe(_ windows: [UInt32]) -> [Probe] {
        let connection = display.connection
        let cookies = windows.map { window in
            (attributes: xcb_get_window_attributes(connection, window),
             geometry: xcb_get_geometry(connection, window),
             state: xcb_get_property(connection, 0, window, wmState, xcb_atom_t(XCB_ATOM_NONE.rawValue), 0, 0),
             tree: xcb_query_tree(connection, window))
        }
        return zip(windows, cookies).map { window, cookie in
            var probe = Probe(id: window)
            if let attributes = xcb_get_window_attributes_reply(connection, cookie.attributes, nil) {
                probe.isViewable = attributes.pointee.map_state == UInt8(XCB_MAP_STATE_VIEWABLE.rawValue)
                    && attributes.pointee._class != UInt16(XCB_WINDOW_CLASS_INPUT_ONLY.rawValue)
                free(attributes)
            }
            if let geometry = xcb_get_geometry_reply(connection, cookie.geometry, nil) {
                // x and y are the outer corner, relative to the parent; the border adds to both sides.
                let g = geometry.pointee, border = 2 * Int(g.border_width)
                probe.geometry = (PixelRect(x: Int(g.x), y: Int(g.y), width: Int(g.width) + border,
                                            height: Int(g.height) + border), g.depth, Int(g.border_width))
                free(geometry)
            }
            if let state = xcb_get_property_reply(connection, cookie.state, nil) {
                probe.hasWMState = state.pointee.type != xcb_atom_t(XCB_ATOM_NONE.rawValue)
                free(state)
            }
            if let tree = xcb_query_tree_reply(connection, cookie.tree, nil) {
                if let children = xcb_query_tree_children(tree) {
                    probe.children = Array(UnsafeBufferPointer(start: children, count: Int(xcb_query_tree_children_length(tree))))
                }
                free(tree)
            }
            return probe
        }
    }
}
