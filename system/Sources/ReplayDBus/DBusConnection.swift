import CSDBus
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// Why a D-Bus call or subscription failed: the bus's error name and message, or errno's.
public struct DBusError: Error, CustomStringConvertible, Sendable {
    /// `org.freedesktop.DBus.Error.ServiceUnknown` and the like; empty for local failures.
    public let name: String
    public let message: String
    /// The call got no reply in time.
    public let timedOut: Bool

    public init(name: String = "", message: String, timedOut: Bool = false) {
        self.name = name
        self.message = message
        self.timedOut = timedOut
    }

    public var description: String { name.isEmpty ? message : "\(name): \(message)" }
}

/// One client connection to a session bus through sd-bus (libsystemd): method calls and
/// signal subscriptions with `DBusValue`s.
///
/// sd-bus objects are not thread-safe: a connection is used by one thread at a time.
public final class DBusConnection {
    let bus: OpaquePointer
    public let uniqueName: String

    /// Connects to `address` (`unix:path=…`), or nil: the user's session bus
    /// (`DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`).
    public init(address: String?) throws(DBusError) {
        var bus: OpaquePointer?
        var result: Int32
        if let address {
            result = sd_bus_new(&bus)
            if result >= 0, let bus {
                result = sd_bus_set_address(bus, address)
                if result >= 0 { result = sd_bus_set_bus_client(bus, 1) }
                if result >= 0 { result = sd_bus_start(bus) }
            }
        } else {
            result = sd_bus_open_user(&bus)
        }
        guard result >= 0, let bus else {
            if let bus { sd_bus_flush_close_unref(bus) }
            throw DBusError(message: "cannot connect to the session bus \(address ?? "of this login session"): \(Self.errnoText(result))")
        }
        var name: UnsafePointer<CChar>?
        guard sd_bus_get_unique_name(bus, &name) >= 0, let name else {
            sd_bus_flush_close_unref(bus)
            throw DBusError(message: "the session bus gave this connection no name")
        }
        self.bus = bus
        uniqueName = String(cString: name)
    }

    deinit { sd_bus_flush_close_unref(bus) }

    /// The bus's socket: readable when a message has come, for an event loop to watch (then
    /// `DBusSubscription.drainSignals` reads what came). A call may read signals meanwhile and
    /// keep them: drain after each call too.
    public var descriptor: Int32 { sd_bus_get_fd(bus) }

    /// Calls `interface.member` and returns the reply's values; a descriptor in the reply
    /// is a duplicate the caller owns.
    public func call(destination: String, path: String, interface: String, member: String,
                     _ arguments: [DBusValue], timeout: Double) throws(DBusError) -> [DBusValue] {
        try reply(destination: destination, path: path, interface: interface, member: member, arguments, timeout: timeout).values
    }

    /// Calls `interface.member` and returns the reply with its sender: the unique name of the
    /// connection that owned `destination` and answered.
    public func reply(destination: String, path: String, interface: String, member: String,
                      _ arguments: [DBusValue], timeout: Double) throws(DBusError) -> DBusMessage {
        var message: OpaquePointer?
        var result = sd_bus_message_new_method_call(bus, &message, destination, path, interface, member)
        guard result >= 0, let message else { throw Self.failure("\(member): cannot build the call", result) }
        defer { sd_bus_message_unref(message) }
        for argument in arguments {
            result = Self.append(argument, to: message)
            guard result >= 0 else { throw Self.failure("\(member): cannot encode \(argument.signature)", result) }
        }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        result = sd_bus_call(bus, message, UInt64(timeout * 1_000_000), &error, &reply)
        guard result >= 0, let reply else {
            let name = error.name.map { String(cString: $0) } ?? ""
            let text = error.message.map { String(cString: $0) } ?? Self.errnoText(result)
            throw DBusError(name: name, message: "\(interface).\(member) failed: \(text)", timedOut: result == -ETIMEDOUT)
        }
        defer { sd_bus_message_unref(reply) }
        return DBusMessage(sender: Self.sender(of: reply), values: Self.readAll(reply))
    }

    /// Starts collecting the `interface.member` signals sent from `path`; with `sender`, the bus
    /// delivers only those of the connection that owns that name. Any client may still send a
    /// signal straight to this connection, which sd-bus cannot tell from a well-known name's:
    /// whoever acts on one checks its `sender`.
    public func subscribe(path: String, interface: String, member: String, sender: String? = nil) throws(DBusError) -> DBusSubscription {
        let subscription = DBusSubscription(connection: self)
        var slot: OpaquePointer?
        // Synchronous: the match is in place on the bus when this returns, before any call
        // that could make the signal be sent.
        let result = sd_bus_match_signal(bus, &slot, sender, path, interface, member, { message, userdata, _ in
            guard let message, let userdata else { return 0 }
            let box = Unmanaged<DBusSubscription>.fromOpaque(userdata).takeUnretainedValue()
            box.received.append(DBusMessage(sender: DBusConnection.sender(of: message), values: DBusConnection.readAll(message)))
            return 0
        }, Unmanaged.passUnretained(subscription).toOpaque())
        guard result >= 0, let slot else { throw Self.failure("cannot subscribe to \(interface).\(member) on \(path)", result) }
        subscription.slot = slot
        return subscription
    }

    /// Dispatches what the bus has, or waits up to `timeout` seconds for more.
    /// Handles one message the bus has already delivered, without waiting; false when there was none.
    func processPending() throws(DBusError) -> Bool {
        let processed = sd_bus_process(bus, nil)
        guard processed >= 0 else { throw Self.failure("the session bus connection broke", processed) }
        return processed > 0
    }

    func pump(timeout: Double) throws(DBusError) {
        let processed = sd_bus_process(bus, nil)
        guard processed >= 0 else { throw Self.failure("the session bus connection broke", processed) }
        if processed > 0 { return }
        let waited = sd_bus_wait(bus, UInt64(max(0, timeout) * 1_000_000))
        guard waited >= 0 || waited == -EINTR else { throw Self.failure("the session bus connection broke", waited) }
    }

    // MARK: encoding

    static func append(_ value: DBusValue, to message: OpaquePointer) -> Int32 {
        func basic<T>(_ type: Character, _ value: T) -> Int32 {
            withUnsafePointer(to: value) { sd_bus_message_append_basic(message, CChar(type.asciiValue!), $0) }
        }
        func container(_ type: Character, _ contents: String, _ values: [DBusValue]) -> Int32 {
            var result = sd_bus_message_open_container(message, CChar(type.asciiValue!), contents)
            for value in values where result >= 0 { result = append(value, to: message) }
            return result >= 0 ? sd_bus_message_close_container(message) : result
        }
        switch value {
        case .byte(let number): return basic("y", number)
        case .bool(let flag): return basic("b", Int32(flag ? 1 : 0))
        case .int32(let number): return basic("i", number)
        case .uint32(let number): return basic("u", number)
        case .int64(let number): return basic("x", number)
        case .uint64(let number): return basic("t", number)
        case .double(let number): return basic("d", number)
        case .unixFD(let fd): return basic("h", fd)
        case .string(let text), .objectPath(let text), .signature(let text):
            // Strings are passed as the characters themselves, not a pointer to them.
            return text.withCString { sd_bus_message_append_basic(message, CChar(value.signature.first!.asciiValue!), $0) }
        case .array(let element, let elements): return container("a", element, elements)
        case .structure(let fields): return container("r", String(value.signature.dropFirst().dropLast()), fields)
        case .dictEntry(let key, let entry): return container("e", String(value.signature.dropFirst().dropLast()), [key, entry])
        case .variant(let inner): return container("v", inner.signature, [inner])
        }
    }

    // MARK: decoding

    /// Every value left in `message`'s body.
    static func readAll(_ message: OpaquePointer) -> [DBusValue] {
        var values: [DBusValue] = []
        while let value = read(message) { values.append(value) }
        return values
    }

    /// The next value in the current container, nil at its end (or on a malformed message).
    static func read(_ message: OpaquePointer) -> DBusValue? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard sd_bus_message_peek_type(message, &type, &contents) > 0 else { return nil }
        let inner = contents.map { String(cString: $0) } ?? ""
        func basic<T: BitwiseCopyable>(_ zero: T) -> T? {
            var value = zero
            return withUnsafeMutableBytes(of: &value) { sd_bus_message_read_basic(message, type, $0.baseAddress) } > 0 ? value : nil
        }
        func container() -> [DBusValue]? {
            guard sd_bus_message_enter_container(message, type, contents) > 0 else { return nil }
            var values: [DBusValue] = []
            while let value = read(message) { values.append(value) }
            guard sd_bus_message_exit_container(message) >= 0 else { return nil }
            return values
        }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "y"): return basic(UInt8(0)).map { .byte($0) }
        case UInt8(ascii: "b"): return basic(Int32(0)).map { .bool($0 != 0) }
        case UInt8(ascii: "n"): return basic(Int16(0)).map { .int32(Int32($0)) }
        case UInt8(ascii: "q"): return basic(UInt16(0)).map { .uint32(UInt32($0)) }
        case UInt8(ascii: "i"): return basic(Int32(0)).map { .int32($0) }
        case UInt8(ascii: "u"): return basic(UInt32(0)).map { .uint32($0) }
        case UInt8(ascii: "x"): return basic(Int64(0)).map { .int64($0) }
        case UInt8(ascii: "t"): return basic(UInt64(0)).map { .uint64($0) }
        case UInt8(ascii: "d"): return basic(Double(0)).map { .double($0) }
        case UInt8(ascii: "h"):
            // The message owns its descriptor: keep a duplicate of our own.
            return basic(Int32(-1)).map { .unixFD(fcntl($0, F_DUPFD_CLOEXEC, 3)) }
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
            var text: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(message, type, &text) > 0, let text else { return nil }
            let string = String(cString: text)
            return type == CChar(UInt8(ascii: "s")) ? .string(string) : type == CChar(UInt8(ascii: "o")) ? .objectPath(string) : .signature(string)
        case UInt8(ascii: "a"): return container().map { .array(element: inner, $0) }
        case UInt8(ascii: "r"): return container().map { .structure($0) }
        case UInt8(ascii: "e"):
            guard let pair = container(), pair.count == 2 else { return nil }
            return .dictEntry(pair[0], pair[1])
        case UInt8(ascii: "v"):
            guard let values = container(), let value = values.first else { return nil }
            return .variant(value)
        default:
            return nil
        }
    }

    /// The unique name the bus stamped on `message` (never what its sender claims).
    static func sender(of message: OpaquePointer) -> String {
        sd_bus_message_get_sender(message).map { String(cString: $0) } ?? ""
    }

    private static func errnoText(_ result: Int32) -> String { String(cString: strerror(-result)) }

    private static func failure(_ what: String, _ result: Int32) -> DBusError {
        DBusError(message: "\(what): \(errnoText(result))")
    }
}

/// A reply or a signal: who sent it, as the bus says, and its body.
public struct DBusMessage: Sendable {
    /// The sender's unique name (`:1.42`); empty on a bus without names.
    public let sender: String
    public let values: [DBusValue]
}

/// Signals collected for one match rule, read with `next`.
public final class DBusSubscription {
    let connection: DBusConnection
    var slot: OpaquePointer?
    fileprivate(set) var received: [DBusMessage] = []

    init(connection: DBusConnection) { self.connection = connection }

    /// The next signal's body, waiting up to `timeout` seconds; nil when none came.
    public func next(timeout: Double) throws(DBusError) -> [DBusValue]? {
        try nextSignal(timeout: timeout)?.values
    }

    /// The next signal with its sender, waiting up to `timeout` seconds; nil when none came.
    public func nextSignal(timeout: Double) throws(DBusError) -> DBusMessage? {
        let deadline = MonotonicClock.nanoseconds() + Int64(timeout * 1e9)
        while received.isEmpty {
            let left = Double(deadline - MonotonicClock.nanoseconds()) / 1e9
            if left <= 0 { return nil }
            try connection.pump(timeout: left)
        }
        return received.removeFirst()
    }

    /// Every signal's body that has arrived by now, without waiting (what the bus has queued is handled first).
    public func drain() throws(DBusError) -> [[DBusValue]] {
        try drainSignals().map(\.values)
    }

    /// Every signal that has arrived by now, with its sender, without waiting.
    public func drainSignals() throws(DBusError) -> [DBusMessage] {
        while try connection.processPending() {}
        defer { received = [] }
        return received
    }

    /// Removes the match; nothing more is collected.
    public func cancel() {
        if let slot { sd_bus_slot_unref(slot) }
        slot = nil
    }

    deinit { cancel() }
    }
