/// A D-Bus value as Swift sees it: what the portal client writes into calls and reads out
/// of replies and signals. Each value knows its own signature, so an `a{sv}` of options is
/// written without a hand-made type string.
public indirect enum DBusValue: Equatable, Sendable {
    case byte(UInt8)
    case bool(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A Unix descriptor; one read from a message is a duplicate the reader owns.
    case unixFD(Int32)
    /// Elements of one type, named by `element` so an empty array still has a signature.
    case array(element: String, [DBusValue])
    case structure([DBusValue])
    case dictEntry(DBusValue, DBusValue)
    case variant(DBusValue)

    /// `a{sv}`, the portal's options and results.
    public static func options(_ entries: [String: DBusValue]) -> DBusValue {
        .array(element: "{sv}", entries.sorted { $0.key < $1.key }.map { .dictEntry(.string($0.key), .variant($0.value)) })
    }

    public var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element, _): "a" + element
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
        case .variant: "v"
        }
    }

    // Readers that see through variants, for picking values out of results.
    public var string: String? {
        switch self {
        case .string(let text), .objectPath(let text): text
        case .variant(let inner): inner.string
        default: nil
        }
    }

    public var uint32: UInt32? {
        switch self {
        case .uint32(let number): number
        case .variant(let inner): inner.uint32
        default: nil
        }
    }

    public var int32: Int32? {
        switch self {
        case .int32(let number): number
        case .variant(let inner): inner.int32
        default: nil
        }
    }

    /// The elements of an array or the fields of a structure.
    public var elements: [DBusValue]? {
        switch self {
        case .array(_, let elements): elements
        case .structure(let fields): fields
        case .variant(let inner): inner.elements
        default: nil
        }
    }

    /// An `a{sv}` (or any dictionary with string keys) as a Swift dictionary, variants unwrapped.
    public var dictionary: [String: DBusValue]? {
        guard let elements else { return nil }
        var result: [String: DBusValue] = [:]
        for element in elements {
            guard case .dictEntry(let key, let value) = element, let name = key.string else { return nil }
            if case .variant(let inner) = value { result[name] = inner } else { result[name] = value }
        }
        return result
    }
}
