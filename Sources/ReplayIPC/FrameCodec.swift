/// The wire format of one message: a big-endian header of two 32-bit lengths, then a
/// JSON document, then an optional binary body (export chunks use it).
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
        /// What the daemon accepts from clients: requests are small and carry no body.
        public static let requests = Limits(maxJSON: 64 * 1024, maxBody: 0)
        /// What clients accept from the daemon: a body holds an export chunk or one I420 picture (4K fits).
        public static let events = Limits(maxJSON: 4 * 1024 * 1024, maxBody: 16 * 1024 * 1024)
    }

    public static func encodeHeader(jsonLength: Int, bodyLength: Int) -> [UInt8] {
        func bigEndian(_ value: Int) -> [UInt8] {
            let v = UInt32(value)
            return [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)]
        }
        return bigEndian(jsonLength) + bigEndian(bodyLength)
    }

    /// Parses and checks a header; returns the JSON and body lengths.
    public static func decodeHeader(_ bytes: some Collection<UInt8>, limits: Limits) throws(ProtocolError) -> (json: Int, body: Int) {
        guard bytes.count == headerSize else { throw .truncated }
        let b = Array(bytes)
        let json = Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3])
        let body = Int(b[4]) << 24 | Int(b[5]) << 16 | Int(b[6]) << 8 | Int(b[7])
        guard json > 0 else { throw .emptyMessage }
        guard json <= limits.maxJSON else { throw .tooLarge(json, limit: limits.maxJSON) }
        guard body <= limits.maxBody else { throw .tooLarge(body, limit: limits.maxBody) }
        return (json, body)
    }
}

/// Why a peer's bytes were refused.
public enum ProtocolError: Error, Equatable, CustomStringConvertible {
    case truncated
    case emptyMessage
    case tooLarge(Int, limit: Int)
    case malformed(String)

    public var description: String {
        switch self {
        case .truncated: "connection closed in the middle of a message"
        case .emptyMessage: "empty message"
        case .tooLarge(let size, let limit): "message of \(size) bytes is over the limit of \(limit)"
        case .malformed(let why): "malformed message: \(why)"
        }
    }
}
