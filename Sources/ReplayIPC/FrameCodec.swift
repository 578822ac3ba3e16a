import FoundationEssentials

/// The wire format of one message of the client protocol (docs/protocol.md): a header of
/// two little-endian UInt32 lengths, the JSON document's and the body's, then the JSON
/// document, then the optional binary body (export chunks and captured pictures use it).
/// Little-endian like the extension protocol's length prefix (`BroadcastCodec`).
///
/// Every length is checked against a limit before anything is allocated or read, so a
/// malformed or hostile peer cannot make the daemon allocate or wait for more.
public enum FrameCodec {
    public static let headerSize = 8

    public struct Limits: Sendable {
        public var maxJSON: Int
        public var maxBody: Int
        public init(maxJSON: Int, maxBody: Int) {
            self.maxJSON = maxJSON
            self.maxBody = maxBody
        }
        /// What the daemon accepts from clients: requests are small and carry no body. One byte
        /// under 64 KiB, so that every protocol-1 (big-endian) header is over it and recognised.
        public static let requests = Limits(maxJSON: 64 * 1024 - 1, maxBody: 0)
        /// What clients accept from the daemon: a body holds an export chunk or one I420 picture
        /// (8K, 7680x4320, is 47.5 MiB).
        public static let events = Limits(maxJSON: 4 * 1024 * 1024, maxBody: 64 * 1024 * 1024)
        /// What a client accepts as the answer to its hello (a welcome or an error), so that a
        /// protocol-1 daemon's big-endian answer is recognised too.
        public static let handshake = Limits(maxJSON: 64 * 1024 - 1, maxBody: 0)
    }

    public static func encodeHeader(jsonLength: Int, bodyLength: Int) -> [UInt8] {
        func littleEndian(_ value: Int) -> [UInt8] {
            let v = UInt32(value)
            return [UInt8(v & 0xff), UInt8(v >> 8 & 0xff), UInt8(v >> 16 & 0xff), UInt8(v >> 24)]
        }
        return littleEndian(jsonLength) + littleEndian(bodyLength)
    }

    /// `message` as a frame's header and JSON, for a body of `bodyLength` bytes that follows it.
    public static func frameHead(_ message: some Encodable, bodyLength: Int = 0) throws -> [UInt8] {
        let json = try JSONEncoder().encode(message)
        return encodeHeader(jsonLength: json.count, bodyLength: bodyLength) + json
    }

    /// Parses and checks a header; returns the JSON and body lengths.
    public static func decodeHeader(_ bytes: some Collection<UInt8>, limits: Limits) throws(ProtocolError) -> (json: Int, body: Int) {
        guard bytes.count == headerSize else { throw .truncated }
        let b = Array(bytes)
        let json = Int(b[0]) | Int(b[1]) << 8 | Int(b[2]) << 16 | Int(b[3]) << 24
        let body = Int(b[4]) | Int(b[5]) << 8 | Int(b[6]) << 16 | Int(b[7]) << 24
        guard json > 0 else { throw .emptyMessage }
        guard json <= limits.maxJSON else {
            if isProtocol1Header(b, limits: limits) { throw .protocol1Peer }
            throw .tooLarge(json, limit: limits.maxJSON)
        }
        guard body <= limits.maxBody else { throw .tooLarge(body, limit: limits.maxBody) }
        return (json, body)
    }

    /// A header over the limits as little-endian that makes sense big-endian: a peer of
    /// protocol 1. With a JSON limit under 64 KiB every protocol-1 header is over it (its
    /// length's two low bytes come first, and at least one is not zero).
    private static func isProtocol1Header(_ b: [UInt8], limits: Limits) -> Bool {
        let json = Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3])
        let body = Int(b[4]) << 24 | Int(b[5]) << 16 | Int(b[6]) << 8 | Int(b[7])
        return json > 0 && json <= limits.maxJSON && body <= limits.maxBody
    }
}

/// Why a peer's bytes were refused.
public enum ProtocolError: Error, Equatable, CustomStringConvertible {
    case truncated
    case emptyMessage
    case tooLarge(Int, limit: Int)
    case malformed(String)
    /// The peer frames its messages big-endian, as the unversioned protocol 1 did.
    case protocol1Peer

    public var description: String {
        switch self {
        case .truncated: "connection closed in the middle of a message"
        case .emptyMessage: "empty message"
        case .tooLarge(let size, let limit): "message of \(size) bytes is over the limit of \(limit)"
        case .malformed(let why): "malformed message: \(why)"
        case .protocol1Peer:
            "the other end speaks protocol 1 (big-endian lengths, no hello) and this end speaks protocol "
                + "\(ClientProtocol.version); update the client or the daemon so they match"
        }
    }
}
