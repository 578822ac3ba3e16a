import FoundationEssentials

/// The version of the protocol between replayd and its clients, and its handshake
/// (docs/protocol.md).
///
/// A connection starts with the client's `hello(protocolVersion:client:minorVersion:capabilities:)`;
/// replayd answers `welcome` when the major versions are equal, else an error naming both and
/// closes. The frame layout, `hello`, `welcome` and `error` never change between versions, so a
/// client and a daemon of different versions always get that far and can say what is wrong.
///
/// Within a major version the protocol grows by minor versions (docs/protocol.md, "Growth"):
/// each side says its minor version and the named capabilities it has, fields and messages are
/// only ever added, unknown fields are ignored, and a request the daemon does not know is
/// answered with `unsupported` while the connection stays open. A client of 2.0 works with a
/// daemon of any 2.x.
public enum ClientProtocol {
    /// The major version. 1 was the unversioned protocol: big-endian lengths, positional `_0`
    /// fields, no hello. 2: little-endian lengths, named fields, the hello handshake.
    public static let version = 2
    /// The minor version of this side. 2.0: the hello handshake. 2.1: minor versions and
    /// capabilities in `hello` and `welcome`, the `unsupported` error. 2.2: `setup` in
    /// `showBroadcastPicker`. 2.3: `watchConsentPreview` for consent agents. 2.4: the picker in
    /// a consent agent's window (`PickerOffer`'s choices, `startPickedBroadcast`, `stopPickedBroadcast`,
    /// `pickerClosed`).
    public static let minorVersion = 4

    /// A named feature one side has, listed in its `hello` (the client's) or `welcome` (the
    /// daemon's). A string on the wire; a name this side does not know is kept and ignored.
    public struct Capability: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The daemon's: it answers a request it does not know with the error `unsupported`
        /// and keeps the connection open (to clients of 2.1 and later).
        public static let unsupportedRequests = Capability(rawValue: "unsupportedRequests")
        /// The client's: it skips events it does not know instead of giving up on the
        /// connection, so a later daemon may send it events of its own minor version unasked.
        public static let skipsUnknownEvents = Capability(rawValue: "skipsUnknownEvents")
        /// The daemon's (2.2): it fills the broadcast picker with the `setup` an app gives in
        /// `showBroadcastPicker` (a daemon without it ignores that field).
        public static let pickerSetup = Capability(rawValue: "pickerSetup")
        /// The daemon's (2.3): a consent agent may watch what the asking app would receive
        /// (`watchConsentPreview`).
        public static let consentPreview = Capability(rawValue: "consentPreview")
        /// The daemon's (2.4): a picker offered to consent agents carries its choices, and an
        /// agent may start and stop its broadcast (`startPickedBroadcast`, `stopPickedBroadcast`).
        public static let nativePicker = Capability(rawValue: "nativePicker")
        /// The daemon's (2.4): `exportRecording` takes a span (`from`, `to`) and exports only that.
        public static let trimmedExport = Capability(rawValue: "trimmedExport")
    }

    /// What replayd lists in its `welcome`.
    public static let daemonCapabilities: [Capability] = [.unsupportedRequests, .pickerSetup, .consentPreview, .nativePicker, .trimmedExport]
    /// What the Swift client (`MessageChannel`: the replay CLI, the SDKs) lists in its `hello`.
    public static let clientCapabilities: [Capability] = [.skipsUnknownEvents]

    /// The `hello` this side sends.
    public static func hello(client: String) -> ClientRequest {
        .hello(protocolVersion: version, client: client, minorVersion: minorVersion, capabilities: clientCapabilities.map(\.rawValue))
    }

    /// What the daemon said in its `welcome`.
    public struct Welcome: Sendable, Equatable {
        public var daemonPID: Int32
        /// 0 for a daemon of 2.0, which does not say.
        public var minorVersion: Int
        public var capabilities: Set<Capability>

        public init(daemonPID: Int32, minorVersion: Int, capabilities: Set<Capability>) {
            self.daemonPID = daemonPID
            self.minorVersion = minorVersion
            self.capabilities = capabilities
        }

        public func offers(_ capability: Capability) -> Bool { capabilities.contains(capability) }
    }

    /// What a connection's first message gets.
    public static func mismatch(daemon: Int, client: Int) -> String {
        "replayd speaks protocol \(daemon) and this client speaks protocol \(client); "
            + "update the client or the daemon so they match"
    }

    /// replayd's answer to the first message of a connection: `welcome` for a hello of this
    /// version, else an error event (after which the daemon closes the connection).
    public static func answer(toFirst request: ClientRequest, daemonPID: Int32) -> DaemonEvent {
        guard case .hello(let protocolVersion, _, _, _) = request else {
            return .error(code: .malformedRequest,
                          message: "the first message must be hello (protocol \(version)); got \(request.name)")
        }
        guard protocolVersion == version else {
            return .error(code: .protocolVersionMismatch, message: mismatch(daemon: version, client: protocolVersion))
        }
        return .welcome(protocolVersion: version, daemonPID: daemonPID, minorVersion: minorVersion,
                        capabilities: daemonCapabilities.map(\.rawValue))
    }

    /// The daemon's side of one connection: lets requests through once the client has said hello.
    public struct Gate: Sendable {
        public enum Verdict: Sendable, Equatable {
            /// An ordinary request after the handshake: handle it.
            case handle
            /// The hello was accepted: send this `welcome`, and handle nothing.
            case answer(DaemonEvent)
            /// Send this error and close the connection.
            case refuse(code: ErrorCode, message: String)
            /// Send this error and carry on: the connection stays open.
            case reject(code: ErrorCode, message: String)
        }

        public private(set) var isOpen = false
        /// What the client called itself in its hello, for the daemon's log; it grants nothing.
        public private(set) var client: String?
        /// The minor version the client said in its hello (0: a client of 2.0, which does not say).
        public private(set) var clientMinorVersion = 0
        /// The capabilities the client listed in its hello.
        public private(set) var clientCapabilities: Set<Capability> = []

        public init() {}

        public mutating func admit(_ request: ClientRequest, daemonPID: Int32) -> Verdict {
            guard isOpen else {
                let answer = ClientProtocol.answer(toFirst: request, daemonPID: daemonPID)
                if case .error(let code, let message) = answer { return .refuse(code: code, message: message) }
                if case .hello(_, let name, let minor, let capabilities) = request {
                    client = name
                    clientMinorVersion = max(0, minor ?? 0)
                    clientCapabilities = Set((capabilities ?? []).prefix(64).map(Capability.init(rawValue:)))
                }
                isOpen = true
                return .answer(answer)
            }
            if case .hello = request {
                return .refuse(code: .outOfOrder, message: "hello was already answered: it is sent once, as the first message")
            }
            return .handle
        }

        /// A well-formed message whose name this daemon does not know (`ClientProtocol.decode`
        /// gave `.unknown`). Before the hello it is refused as any other first message; from a
        /// client of 2.1 or later it is `unsupported` and the connection stays open; a client
        /// of 2.0 gets what 2.0 gave it: `malformedRequest`, and the connection closed.
        public mutating func admitUnknown(name: String) -> Verdict {
            let shown = ClientProtocol.printable(name)
            guard isOpen else {
                return .refuse(code: .malformedRequest, message: "the first message must be hello (protocol \(version)); got \(shown)")
            }
            guard clientMinorVersion >= 1 else {
                return .refuse(code: .malformedRequest, message: "malformed message: unknown request '\(shown)'")
            }
            return .reject(code: .unsupported,
                           message: "replayd speaks protocol \(version).\(minorVersion) and does not know the request '\(shown)'")
        }
    }

    /// A message as it decoded: one this side knows, or a well-formed one of a later version.
    public enum Decoded<Message> {
        case message(Message)
        /// A JSON object with one key whose value is an object, as every message is, under a
        /// name this side does not know.
        case unknown(name: String)
    }

    /// Decodes one message's JSON document. A well-formed message of an unknown name is
    /// `.unknown`; anything else that does not decode is `ProtocolError.malformed`.
    public static func decode<M: Decodable>(_ type: M.Type, from json: some Collection<UInt8>) throws(ProtocolError) -> Decoded<M> {
        let data = Data(json)
        do {
            return .message(try JSONDecoder().decode(M.self, from: data))
        } catch {
            // The message enums refuse a name they do not know as a type mismatch of the whole
            // document; a known name with bad fields fails deeper down, at a coding path.
            if case DecodingError.typeMismatch(_, let context)? = error as? DecodingError, context.codingPath.isEmpty,
               let shape = try? JSONDecoder().decode(MessageShape.self, from: data) {
                return .unknown(name: shape.name)
            }
            throw ProtocolError.malformed(explaining: error)
        }
    }

    /// A peer's name for the daemon's answer and log: at most 64 printable ASCII characters.
    static func printable(_ name: String) -> String {
        let kept = name.unicodeScalars.prefix(64).map { (0x20..<0x7f).contains($0.value) ? Character($0) : "?" }
        return String(kept) + (name.unicodeScalars.count > 64 ? "…" : "")
    }
}

/// The client's side of the handshake did not end in a `welcome`.
public enum HandshakeError: Error, Equatable, CustomStringConvertible {
    /// The daemon speaks another protocol version; the message names both.
    case versionMismatch(String)
    /// The daemon refused the connection (too many connections, ...).
    case refused(code: ErrorCode, message: String)
    /// No answer, an answer that is not a welcome, or a connection closed early.
    case failed(String)

    public var description: String {
        switch self {
        case .versionMismatch(let message): message
        case .refused(_, let message): "replayd refused the connection: \(message)"
        case .failed(let why): "no handshake with replayd: \(why)"
        }
    }
}

extension ClientRequest {
    /// The case's name, as it appears on the wire ("startRecording").
    public var name: String {
        let text = String(describing: self)
        return String(text.prefix { $0 != "(" })
    }
}

/// A JSON object with one key whose value is an object: every message's shape, whatever its name.
private struct MessageShape: Decodable {
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    let name: String

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not one key"))
        }
        _ = try container.nestedContainer(keyedBy: Key.self, forKey: key)
        name = key.stringValue
    }
}
