public import ReplayDBus
#if canImport(Glibc)
import Glibc
#endif

/// What the portal client needs from a bus: method calls and signal subscriptions. sd-bus
/// (`DBusConnection`) in production, a scripted fake in the unit tests.
protocol PortalBus: AnyObject {
    /// This connection's unique name (":1.42"): part of every Request object's path.
    var uniqueName: String { get }
    func call(destination: String, path: String, interface: String, member: String,
              _ arguments: [DBusValue], timeout: Double) throws(DBusError) -> [DBusValue]
    /// Starts collecting `interface.member` signals sent from `path`.
    func subscribe(path: String, interface: String, member: String) throws(DBusError) -> any SignalSubscription
}

protocol SignalSubscription: AnyObject {
    /// The next signal's body, waiting up to `timeout` seconds; nil when none came.
    func next(timeout: Double) throws(DBusError) -> [DBusValue]?
    func cancel()
}

extension DBusSubscription: SignalSubscription {}

/// sd-bus as the portal's bus.
final class SDBusPortalBus: PortalBus {
    let connection: DBusConnection
    init(_ connection: DBusConnection) { self.connection = connection }
    var uniqueName: String { connection.uniqueName }

    func call(destination: String, path: String, interface: String, member: String,
              _ arguments: [DBusValue], timeout: Double) throws(DBusError) -> [DBusValue] {
        try connection.call(destination: destination, path: path, interface: interface, member: member, arguments, timeout: timeout)
    }

    func subscribe(path: String, interface: String, member: String) throws(DBusError) -> any SignalSubscription {
        try connection.subscribe(path: path, interface: interface, member: member)
    }
}

/// What to ask the ScreenCast portal for.
public struct ScreenCastRequest: Sendable {
    /// How the pointer reaches us: not at all, drawn into the picture by the compositor, or
    /// as metadata beside the picture (which we then draw, or not).
    public enum Cursor: UInt32, Sendable {
        case hidden = 1
        case embedded = 2
        case metadata = 4
    }

    public var source: ScreenCastSource
    public var showCursor: Bool
    /// Whether the consumer can draw a metadata cursor itself; if so, metadata is preferred,
    /// so the choice to show it stays ours.
    public var drawsMetadataCursor: Bool
    /// A token from an earlier Start: the portal may then skip its dialog.
    public var restoreToken: String?
    /// 2: the permission lasts until revoked, and Start returns a restore token.
    public var persistMode: UInt32
    /// How long to wait for each Response: a dialog waits for a person.
    public var responseTimeout: Double

    public init(source: ScreenCastSource = .monitor, showCursor: Bool = true, drawsMetadataCursor: Bool = false, restoreToken: String? = nil,
                persistMode: UInt32 = 2, responseTimeout: Double = 30) {
        self.source = source
        self.showCursor = showCursor
        self.drawsMetadataCursor = drawsMetadataCursor
        self.restoreToken = restoreToken
        self.persistMode = persistMode
        self.responseTimeout = responseTimeout
    }

    /// The cursor mode to ask for among the portal's `available` ones (a bit mask), or nil
    /// to leave it to the portal (it offers none we can use).
    func cursorMode(available: UInt32) -> Cursor? {
        let order: [Cursor] = showCursor
            ? (drawsMetadataCursor ? [.metadata, .embedded] : [.embedded, .metadata])
            : [.hidden]
        return order.first { available & $0.rawValue != 0 }
    }
}

/// One stream of a started ScreenCast session: a PipeWire node.
public struct ScreenCastStream: Equatable, Sendable {
    public let nodeID: UInt32
    /// The size the portal reports, when it does (the negotiated format is what counts).
    public let width: Int?
    public let height: Int?
    /// 1 monitor, 2 window, 4 virtual.
    public let sourceType: UInt32?
}

/// A started ScreenCast session: its streams, the PipeWire remote to read them through, and
/// the restore token for next time. The session lasts while the bus connection is open.
final class ScreenCastSession {
    let handle: String
    let streams: [ScreenCastStream]
    let restoreToken: String?
    /// The descriptor OpenPipeWireRemote returned; whoever connects to it takes it over.
    private(set) var pipeWireRemote: Int32
    private let bus: any PortalBus

    init(bus: any PortalBus, handle: String, streams: [ScreenCastStream], restoreToken: String?, pipeWireRemote: Int32) {
        self.bus = bus
        self.handle = handle
        self.streams = streams
        self.restoreToken = restoreToken
        self.pipeWireRemote = pipeWireRemote
    }

    /// Hands the PipeWire remote over (PipeWire closes it with its connection).
    func takePipeWireRemote() -> Int32 {
        defer { pipeWireRemote = -1 }
        return pipeWireRemote
    }

    /// Ends the session: the compositor stops the stream.
    func close() {
        if pipeWireRemote >= 0 { Glibc.close(pipeWireRemote) }
        pipeWireRemote = -1
        _ = try? bus.call(destination: ScreenCastPortal.service, path: handle, interface: "org.freedesktop.portal.Session",
                          member: "Close", [], timeout: 2)
    }

    deinit { close() }
}

/// The client side of org.freedesktop.portal.ScreenCast: CreateSession, SelectSources,
/// Start, OpenPipeWireRemote. Each of the first three answers through a Request object's
/// Response signal, which is subscribed to before the call so it cannot be missed.
struct ScreenCastPortal {
    static let service = "org.freedesktop.portal.Desktop"
    static let objectPath = "/org/freedesktop/portal/desktop"
    static let interface = "org.freedesktop.portal.ScreenCast"

    let bus: any PortalBus
    /// For plain method calls (not the Responses, which may wait for a person).
    var callTimeout: Double = 10
    /// Makes each handle token unique within this process.
    private let tokenPrefix = "replayd\(getpid())_\(UInt32.random(in: 0...UInt32.max))"

    init(bus: any PortalBus) { self.bus = bus }

    /// The Request object a call with `token` as its handle_token answers on (the portal spec's rule).
    static func requestPath(uniqueName: String, token: String) -> String {
        let sender = String(uniqueName.drop { $0 == ":" }.map { $0 == "." ? "_" : $0 })
        return "\(objectPath)/request/\(sender)/\(token)"
    }

    /// Opens a session for one monitor: asks the portal (and through it, the person or a
    /// stored permission) and returns the started stream with its PipeWire remote.
    func open(_ request: ScreenCastRequest) throws(CaptureError) -> ScreenCastSession {
        do {
            return try openSession(request)
        } catch let error as CaptureError {
            throw error
        } catch let error as DBusError {
            throw CaptureError(error.timedOut ? .portalTimedOut : .portalUnavailable, "ScreenCast portal: \(error)")
        } catch {
            throw CaptureError(.portalUnavailable, "ScreenCast portal: \(error)")
        }
    }

    private func openSession(_ request: ScreenCastRequest) throws -> ScreenCastSession {
        let version = try property("version")?.uint32 ?? 1
        let cursorModes = try property("AvailableCursorModes")?.uint32 ?? 0
        let sourceTypes = try property("AvailableSourceTypes")?.uint32 ?? 1
        guard sourceTypes & request.source.rawValue != 0 else {
            throw CaptureError(.portalUnavailable, "this desktop's ScreenCast portal offers no \(request.source) to share (source types "
                + "\(sourceTypes)\(request.source == .window ? "; xdg-desktop-portal-wlr shares monitors only" : ""))")
        }

        let created = try self.request("CreateSession", [], ["session_handle_token": .string("\(tokenPrefix)_session")],
                                       timeout: request.responseTimeout)
        guard let handle = created["session_handle"]?.string else {
            throw CaptureError(.portalUnavailable, "ScreenCast.CreateSession answered without a session_handle")
        }
        do {
            var selection: [String: DBusValue] = ["types": .uint32(request.source.rawValue), "multiple": .bool(false)]
            if let mode = request.cursorMode(available: cursorModes) { selection["cursor_mode"] = .uint32(mode.rawValue) }
            // persist_mode and restore_token came with version 4; older portals reject unknown options.
            if version >= 4 {
                selection["persist_mode"] = .uint32(request.persistMode)
                if let token = request.restoreToken, !token.isEmpty { selection["restore_token"] = .string(token) }
            }
            _ = try self.request("SelectSources", [.objectPath(handle)], selection, timeout: request.responseTimeout)
            let started = try self.request("Start", [.objectPath(handle), .string("")], [:], timeout: request.responseTimeout)
            let streams = try Self.streams(in: started)
            let reply = try bus.call(destination: Self.service, path: Self.objectPath, interface: Self.interface,
                                     member: "OpenPipeWireRemote", [.objectPath(handle), .options([:])], timeout: callTimeout)
            guard case .unixFD(let fd)? = reply.first, fd >= 0 else {
                throw CaptureError(.portalUnavailable, "ScreenCast.OpenPipeWireRemote returned no descriptor")
            }
            return ScreenCastSession(bus: bus, handle: handle, streams: streams, restoreToken: started["restore_token"]?.string,
                                     pipeWireRemote: fd)
        } catch {
            _ = try? bus.call(destination: Self.service, path: handle, interface: "org.freedesktop.portal.Session",
                              member: "Close", [], timeout: 2)
            throw error
        }
    }

    /// Calls `method` with `options` plus a handle_token, and waits for its Response.
    func request(_ method: String, _ arguments: [DBusValue], _ options: [String: DBusValue],
                 timeout: Double) throws -> [String: DBusValue] {
        let token = "\(tokenPrefix)_\(method)"
        let expected = Self.requestPath(uniqueName: bus.uniqueName, token: token)
        var responses = try bus.subscribe(path: expected, interface: "org.freedesktop.portal.Request", member: "Response")
        defer { responses.cancel() }
        var options = options
        options["handle_token"] = .string(token)
        let reply = try bus.call(destination: Self.service, path: Self.objectPath, interface: Self.interface, member: method,
                                 arguments + [.options(options)], timeout: callTimeout)
        guard let handle = reply.first?.string else {
            throw CaptureError(.portalUnavailable, "ScreenCast.\(method) returned no request handle")
        }
        if handle != expected {
            // Portals older than 0.9 choose their own path; the Response cannot come before the reply is handled.
            responses.cancel()
            responses = try bus.subscribe(path: handle, interface: "org.freedesktop.portal.Request", member: "Response")
        }
        guard let body = try responses.next(timeout: timeout) else {
            _ = try? bus.call(destination: Self.service, path: handle, interface: "org.freedesktop.portal.Request",
                              member: "Close", [], timeout: 2)
            throw CaptureError(.portalTimedOut,
                               "the ScreenCast portal did not answer \(method) within \(Int(timeout)) s: the desktop is probably showing a dialog that nobody answered")
        }
        guard body.count == 2, case .uint32(let code) = body[0], let results = body[1].dictionary else {
            throw CaptureError(.portalUnavailable, "ScreenCast.\(method) answered with a malformed Response")
        }
        switch code {
        case 0: return results
        case 1: throw CaptureError(.portalDenied, "screen sharing was declined (ScreenCast.\(method) was cancelled)")
        default: throw CaptureError(.portalDenied, "the desktop ended the screen-sharing request (ScreenCast.\(method) response \(code))")
        }
    }

    private func property(_ name: String) throws -> DBusValue? {
        do {
            return try bus.call(destination: Self.service, path: Self.objectPath, interface: "org.freedesktop.DBus.Properties",
                                member: "Get", [.string(Self.interface), .string(name)], timeout: callTimeout).first
        } catch {
            throw CaptureError(.portalUnavailable,
                               "no ScreenCast portal on the session bus (\(error)); xdg-desktop-portal and a backend for this desktop (xdg-desktop-portal-gnome, -kde or -wlr) must be installed and running")
        }
    }

    static func streams(in results: [String: DBusValue]) throws(CaptureError) -> [ScreenCastStream] {
        let streams = (results["streams"]?.elements ?? []).compactMap { element -> ScreenCastStream? in
            guard let fields = element.elements, fields.count == 2, case .uint32(let node) = fields[0] else { return nil }
            let properties = fields[1].dictionary ?? [:]
            let size = properties["size"]?.elements?.compactMap(\.int32)
            return ScreenCastStream(nodeID: node, width: size?.count == 2 ? Int(size![0]) : nil,
                                    height: size?.count == 2 ? Int(size![1]) : nil, sourceType: properties["source_type"]?.uint32)
        }
        guard !streams.isEmpty else { throw CaptureError(.portalUnavailable, "ScreenCast.Start answered without a stream") }
        return streams
    }
}
