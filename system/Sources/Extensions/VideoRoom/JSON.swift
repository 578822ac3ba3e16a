import FoundationEssentials

/// A JSON value: Janus's messages, whose shape depends on the request and the plugin, read
/// and written with FoundationEssentials' coders. Integers are kept apart from other numbers
/// so that Janus's 64-bit ids survive.
enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    subscript(key: String) -> JSON? {
        if case .object(let members) = self { members[key] } else { nil }
    }

    var string: String? {
        if case .string(let text) = self { text } else { nil }
    }

    var integer: Int64? {
        if case .integer(let number) = self { number } else { nil }
    }

    /// Parses `bytes` (UTF-8).
    init(parsing bytes: [UInt8]) throws {
        self = try JSONDecoder().decode(JSON.self, from: Data(bytes))
    }

    /// As UTF-8 text; keys sorted, so the same value is always the same text.
    var encoded: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every case encodes: no value of this type can fail (a non-finite number becomes null).
        return (try? encoder.encode(self)).map { [UInt8]($0) } ?? Array("null".utf8)
    }
}

extension JSON: Codable {
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSON].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value) where value.isFinite: try container.encode(value)
        case .number: try container.encodeNil()
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

/// Strings as they are (a reason in a message), anything else as JSON.
extension JSON: CustomStringConvertible {
    var description: String {
        if case .string(let text) = self { return text }
        return String(decoding: encoded, as: UTF8.self)
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral {
    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int64) { self = .integer(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(dictionaryLiteral elements: (String, JSON)...) { self = .object(Dictionary(elements) { $1 }) }
    init(arrayLiteral elements: JSON...) { self = .array(elements) }
}
