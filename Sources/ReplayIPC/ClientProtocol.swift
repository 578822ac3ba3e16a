/// The version of the protocol between replayd and its clients, and its handshake
/// (docs/protocol.md).
///
/// A connection starts with the client's `hello(protocolVersion:client:)`; replayd answers
/// `welcome` when the versions are equal, else an error naming both and closes. The frame
/// layout, `hello`, `welcome` and `error` never change between versions, so a client and a
/// daemon of different versions always get that far and can say what is wrong.
public enum ClientProtocol {
    /// 1 was the unversioned protocol: big-endian lengths, positional `_0` fields, no hello.
    /// 2: little-endian lengths, named fields, the hello handshake.
    public static let version = 2

    /// What a connection's first message gets.
    public static func mismatch(daemon: Int, client: Int) -> String {
        "replayd speaks protocol \(daemon) and this client speaks protocol \(client); "
            + "update the client or the daemon so they match"
    }

    /// replayd's answer to the first message of a connection: `welcome` for a hello of this
    /// version, else an error event (after which the daemon closes the connection).
    public static func answer(toFirst request: ClientRequest, daemonPID: Int32) -> DaemonEvent {
        guard case .hello(let protocolVersion, _) = request else {
            return .error(code: .malformedRequest,
                          message: "the first message must be hello (protocol \(version)); got \(request.name)")
        }
        guard protocolVersion == version else {
            return .error(code: .protocolVersionMismatch, message: mismatch(daemon: version, client: protocolVersion))
        }
        return .welcome(protocolVersion: version, daemonPID: daemonPID)
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
        }

        public private(set) var isOpen = false
        /// What the client called itself in its hello, for the daemon's log; it grants nothing.
        public private(set) var client: String?

        public init() {}

        public mutating func admit(_ request: ClientRequest, daemonPID: Int32) -> Verdict {
            guard isOpen else {
                let answer = ClientProtocol.answer(toFirst: request, daemonPID: daemonPID)
                if case .error(let code, let message) = answer { return .refuse(code: code, message: message) }
                if case .hello(_, let name) = request { client = name }
                isOpen = true
                return .answer(answer)
            }
            if case .hello = request {
                return .refuse(code: .outOfOrder, message: "hello was already answered: it is sent once, as the first message")
            }
            return .handle
        }
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
