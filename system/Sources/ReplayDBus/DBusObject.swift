import CSDBus
#if canImport(Glibc)
import Glibc
#endif

/// A method call to an object this connection serves: who called (the unique name the bus
/// stamped on it, never what the caller claims), what, and with what.
public struct DBusMethodCall: Sendable {
    public let sender: String
    public let path: String
    public let interface: String
    public let member: String
    public let arguments: [DBusValue]
}

/// What a served object answers: a reply's values, or an error by name.
public enum DBusAnswer: Sendable {
    case reply([DBusValue])
    case error(name: String, message: String)

    public static func unknownMethod(_ call: DBusMethodCall) -> DBusAnswer {
        .error(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no method \(call.interface).\(call.member) here")
    }
}

/// An object served on a path: its calls answered by a handler, until cancelled.
public final class DBusObject {
    fileprivate var slot: OpaquePointer?
    fileprivate let handler: (DBusMethodCall) -> DBusAnswer

    fileprivate init(handler: @escaping (DBusMethodCall) -> DBusAnswer) { self.handler = handler }

    /// Stops serving the path.
    public func cancel() {
        if let slot { sd_bus_slot_unref(slot) }
        slot = nil
    }

    deinit { cancel() }
}

extension DBusConnection {
    /// Takes the well-known `name` on the bus (replacing nobody, queueing for nothing).
    public func requestName(_ name: String) throws(DBusError) {
        let result = sd_bus_request_name(bus, name, 0)
        guard result >= 0 else { throw DBusError(message: "cannot take the bus name \(name): \(String(cString: strerror(-result)))") }
    }

    /// Gives the well-known `name` back (its watchers see it go).
    public func releaseName(_ name: String) {
        _ = sd_bus_release_name(bus, name)
    }

    /// Serves `path`: every method call to it (any interface) is answered by `handler`, on the
    /// thread that processes this connection's messages (a call, or `processPending`).
    public func serve(path: String, handler: @escaping (DBusMethodCall) -> DBusAnswer) throws(DBusError) -> DBusObject {
        let object = DBusObject(handler: handler)
        var slot: OpaquePointer?
        let result = sd_bus_add_object(bus, &slot, path, { message, userdata, _ in
            var type: UInt8 = 0
            guard let message, let userdata, sd_bus_message_get_type(message, &type) >= 0, Int(type) == SD_BUS_MESSAGE_METHOD_CALL else { return 0 }
            let object = Unmanaged<DBusObject>.fromOpaque(userdata).takeUnretainedValue()
            let call = DBusMethodCall(
                sender: DBusConnection.sender(of: message),
                path: sd_bus_message_get_path(message).map { String(cString: $0) } ?? "",
                interface: sd_bus_message_get_interface(message).map { String(cString: $0) } ?? "",
                member: sd_bus_message_get_member(message).map { String(cString: $0) } ?? "",
                arguments: DBusConnection.readAll(message))
            DBusConnection.answer(message, with: object.handler(call))
            return 1
        }, Unmanaged.passUnretained(object).toOpaque())
        guard result >= 0, let slot else { throw DBusError(message: "cannot serve \(path): \(String(cString: strerror(-result)))") }
        object.slot = slot
        return object
    }

    /// Sends the signal `interface.member` from `path` to whoever listens.
    public func emit(path: String, interface: String, member: String, _ values: [DBusValue]) throws(DBusError) {
        var message: OpaquePointer?
        var result = sd_bus_message_new_signal(bus, &message, path, interface, member)
        guard result >= 0, let message else { throw DBusError(message: "cannot build the signal \(member)") }
        defer { sd_bus_message_unref(message) }
        for value in values where result >= 0 { result = Self.append(value, to: message) }
        if result >= 0 { result = sd_bus_send(bus, message, nil) }
        guard result >= 0 else { throw DBusError(message: "cannot send the signal \(member): \(String(cString: strerror(-result)))") }
    }

    /// Handles every message the bus has delivered (calls to served objects, signals), without waiting.
    public func processAll() throws(DBusError) {
        while try processPending() {}
    }

    /// Handles what the bus has delivered, or waits up to `timeout` seconds for something to come.
    public func processOrWait(timeout: Double) throws(DBusError) {
        try pump(timeout: timeout)
    }

    /// Whether a connection owns `name` now.
    public func hasOwner(_ name: String) -> Bool {
        (try? call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                   member: "NameHasOwner", [.string(name)], timeout: 2).first) == .bool(true)
    }

    /// The unique name that owns `name` now, if any.
    public func owner(of name: String) -> String? {
        (try? call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                   member: "GetNameOwner", [.string(name)], timeout: 2).first)?.string
    }

    fileprivate static func answer(_ call: OpaquePointer, with answer: DBusAnswer) {
        switch answer {
        case .reply(let values):
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(call, &reply) >= 0, let reply else { return }
            defer { sd_bus_message_unref(reply) }
            for value in values where append(value, to: reply) < 0 { return }
            _ = sd_bus_send(nil, reply, nil)
        case .error(let name, let text):
            var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
            defer { sd_bus_error_free(&error) }
            _ = sd_bus_error_set(&error, name, text)
            _ = sd_bus_reply_method_error(call, &error)
        }
    }
}
