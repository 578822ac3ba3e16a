import FoundationEssentials

/// The capture channel's messages in a compact binary form, for any `Codable` type.
///
/// The channel carries a status twice a second for as long as a session runs, and a broadcast's
/// every sample. Foundation's JSON coders are large code, which stays mapped while a session
/// runs (the kernel maps a binary's code 64 KB at a fault), and they carried a sample's bytes
/// as base64. This coder is small and carries `Data` as bytes. It is self-describing (keys
/// are written), so a type's own `init(from:)` may read its keys in any order, ask `contains`,
/// and decode what is absent as nil, as it would from JSON.
///
/// A value is one tag byte and what the tag says follows, little-endian:
///
/// | tag | value | then |
/// |---|---|---|
/// | 0 | nil | — |
/// | 1, 2 | false, true | — |
/// | 3 | signed integer | 8 bytes |
/// | 4 | unsigned integer | 8 bytes |
/// | 5 | floating point | 8 bytes (IEEE 754 binary64) |
/// | 6 | string | UInt32 length, UTF-8 |
/// | 7 | bytes (`Data`) | UInt32 length, the bytes |
/// | 8 | list | UInt32 count, the values |
/// | 9 | keyed | UInt32 count, then per entry a key (UInt32 length, UTF-8) and its value |
///
/// Both ends are built from one source tree (replayd starts its own `replay-capture`), so
/// the form needs no version. Decoding checks every length against what is left and nests
/// at most `maxDepth` deep: a broken or hostile capture process gets an error, never a crash.
package enum PacketCoding {
    static let maxDepth = 32

    package static func encode(_ value: some Encodable) throws -> [UInt8] {
        let root = EncodedNode()
        try root.store(value, codingPath: [])
        var bytes: [UInt8] = []
        root.value.write(to: &bytes)
        return bytes
    }

    package static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        var reader = PacketReader(bytes: bytes)
        let value = try reader.readValue(depth: 0)
        guard reader.isAtEnd else { throw PacketReader.corrupt("\(bytes.count - reader.offset) bytes after the value") }
        return try ValueDecoder(value: value, codingPath: []).decodeValue(T.self)
    }
}

/// A decoded (or encodable) value: the tree both directions go through.
indirect enum PacketValue {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case bytes([UInt8])
    case list([PacketValue])
    case keyed([(key: String, value: PacketValue)])

    var isNull: Bool { if case .null = self { true } else { false } }

    func write(to bytes: inout [UInt8]) {
        func append(_ number: UInt64) { withUnsafeBytes(of: number.littleEndian) { bytes.append(contentsOf: $0) } }
        func append(length: Int) { withUnsafeBytes(of: UInt32(length).littleEndian) { bytes.append(contentsOf: $0) } }
        func append(text: String) {
            let utf8 = Array(text.utf8)
            append(length: utf8.count)
            bytes.append(contentsOf: utf8)
        }
        switch self {
        case .null: bytes.append(0)
        case .bool(let value): bytes.append(value ? 2 : 1)
        case .int(let value): bytes.append(3); append(UInt64(bitPattern: value))
        case .uint(let value): bytes.append(4); append(value)
        case .double(let value): bytes.append(5); append(value.bitPattern)
        case .string(let value): bytes.append(6); append(text: value)
        case .bytes(let value): bytes.append(7); append(length: value.count); bytes.append(contentsOf: value)
        case .list(let values):
            bytes.append(8)
            append(length: values.count)
            for value in values { value.write(to: &bytes) }
        case .keyed(let entries):
            bytes.append(9)
            append(length: entries.count)
            for entry in entries {
                append(text: entry.key)
                entry.value.write(to: &bytes)
            }
        }
    }
}

struct PacketReader {
    let bytes: [UInt8]
    var offset = 0
    var isAtEnd: Bool { offset == bytes.count }

    static func corrupt(_ why: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "not a capture channel packet: \(why)"))
    }

    mutating func readValue(depth: Int) throws -> PacketValue {
        guard depth <= PacketCoding.maxDepth else { throw Self.corrupt("nested over \(PacketCoding.maxDepth) deep") }
        switch try readByte() {
        case 0: return .null
        case 1: return .bool(false)
        case 2: return .bool(true)
        case 3: return .int(Int64(bitPattern: try readNumber()))
        case 4: return .uint(try readNumber())
        case 5: return .double(Double(bitPattern: try readNumber()))
        case 6: return .string(try readText())
        case 7: return .bytes(try readBytes(try readLength(each: 1)))
        case 8:
            let count = try readLength(each: 1)  // every value is at least its tag
            var values: [PacketValue] = []
            values.reserveCapacity(count)
            for _ in 0..<count { values.append(try readValue(depth: depth + 1)) }
            return .list(values)
        case 9:
            let count = try readLength(each: 5)  // a key's length and a value's tag
            var entries: [(key: String, value: PacketValue)] = []
            entries.reserveCapacity(count)
            for _ in 0..<count { entries.append((try readText(), try readValue(depth: depth + 1))) }
            return .keyed(entries)
        case let tag: throw Self.corrupt("unknown tag \(tag) at byte \(offset - 1)")
        }
    }

    private mutating func readByte() throws -> UInt8 {
        guard offset < bytes.count else { throw Self.corrupt("it ends early") }
        defer { offset += 1 }
        return bytes[offset]
    }

    private mutating func readNumber() throws -> UInt64 {
        guard bytes.count - offset >= 8 else { throw Self.corrupt("it ends early") }
        var number: UInt64 = 0
        for index in 0..<8 { number |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
        offset += 8
        return number
    }

    /// A count of things at least `each` bytes long apiece, which must fit in what is left.
    private mutating func readLength(each: Int) throws -> Int {
        guard bytes.count - offset >= 4 else { throw Self.corrupt("it ends early") }
        var length = 0
        for index in 0..<4 { length |= Int(bytes[offset + index]) << (8 * index) }
        offset += 4
        guard length <= (bytes.count - offset) / each else { throw Self.corrupt("a length of \(length) runs past its end") }
        return length
    }

    private mutating func readBytes(_ count: Int) throws -> [UInt8] {
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    private mutating func readText() throws -> String {
        let utf8 = try readBytes(try readLength(each: 1))
        guard let text = String(validating: utf8, as: UTF8.self) else { throw Self.corrupt("a string that is not UTF-8") }
        return text
    }
}

// MARK: - Encoding

/// One value being encoded. Containers hand out child nodes that are filled in later, so the
/// tree is made of references until `value` reads it out.
final class EncodedNode {
    private enum Content {
        case value(PacketValue)
        case keyed([(key: String, node: EncodedNode)])
        case list([EncodedNode])
    }
    private var content = Content.value(.null)

    var value: PacketValue {
        switch content {
        case .value(let value): value
        case .keyed(let entries): .keyed(entries.map { ($0.key, $0.node.value) })
        case .list(let nodes): .list(nodes.map(\.value))
        }
    }

    func set(_ value: PacketValue) { content = .value(value) }

    func store(_ value: some Encodable, codingPath: [any CodingKey]) throws {
        if let data = value as? Data { return set(.bytes(Array(data))) }
        try value.encode(to: NodeEncoder(node: self, codingPath: codingPath))
    }

    /// The child for `key`, made keyed first if this node was not yet.
    func child(for key: String) -> EncodedNode {
        guard case .keyed(var entries) = content else {
            let node = EncodedNode()
            content = .keyed([(key, node)])
            return node
        }
        if let found = entries.first(where: { $0.key == key }) { return found.node }
        let node = EncodedNode()
        content = .value(.null)  // the array's only holder now: appended to in place, not copied
        entries.append((key, node))
        content = .keyed(entries)
        return node
    }

    func makeKeyed() { if case .keyed = content {} else { content = .keyed([]) } }
    func makeList() { if case .list = content {} else { content = .list([]) } }

    func appendChild() -> EncodedNode {
        let node = EncodedNode()
        guard case .list(var nodes) = content else {
            content = .list([node])
            return node
        }
        content = .value(.null)  // as in `child(for:)`
        nodes.append(node)
        content = .list(nodes)
        return node
    }

    var count: Int { if case .list(let nodes) = content { nodes.count } else { 0 } }
}

private struct NodeEncoder: Encoder {
    let node: EncodedNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.makeKeyed()
        return KeyedEncodingContainer(KeyedNodeEncoder(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.makeList()
        return ListNodeEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleNodeEncoder(node: node, codingPath: codingPath) }
}

private struct KeyedNodeEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodedNode
    let codingPath: [any CodingKey]

    private func child(_ key: Key) -> EncodedNode { node.child(for: key.stringValue) }

    mutating func encodeNil(forKey key: Key) throws { child(key).set(.null) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { child(key).set(.bool(value)) }
    mutating func encode(_ value: String, forKey key: Key) throws { child(key).set(.string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws { child(key).set(.double(value)) }
    mutating func encode(_ value: Int, forKey key: Key) throws { child(key).set(.int(Int64(value))) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try child(key).store(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: child(key), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        NodeEncoder(node: child(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.child(for: "super"), codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { NodeEncoder(node: child(key), codingPath: codingPath + [key]) }
}

private struct ListNodeEncoder: UnkeyedEncodingContainer {
    let node: EncodedNode
    let codingPath: [any CodingKey]
    var count: Int { node.count }

    mutating func encodeNil() throws { node.appendChild().set(.null) }
    mutating func encode(_ value: Bool) throws { node.appendChild().set(.bool(value)) }
    mutating func encode(_ value: String) throws { node.appendChild().set(.string(value)) }
    mutating func encode(_ value: Double) throws { node.appendChild().set(.double(value)) }
    mutating func encode(_ value: Int) throws { node.appendChild().set(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { node.appendChild().set(.uint(UInt64(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.appendChild().store(value, codingPath: codingPath) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: node.appendChild(), codingPath: codingPath).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        NodeEncoder(node: node.appendChild(), codingPath: codingPath).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.appendChild(), codingPath: codingPath) }
}

private struct SingleNodeEncoder: SingleValueEncodingContainer {
    let node: EncodedNode
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.set(.null) }
    mutating func encode(_ value: Bool) throws { node.set(.bool(value)) }
    mutating func encode(_ value: String) throws { node.set(.string(value)) }
    mutating func encode(_ value: Double) throws { node.set(.double(value)) }
    mutating func encode(_ value: Float) throws { node.set(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { node.set(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { node.set(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { node.set(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { node.set(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { node.set(.int(value)) }
    mutating func encode(_ value: UInt) throws { node.set(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { node.set(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt16) throws { node.set(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt32) throws { node.set(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt64) throws { node.set(.uint(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.store(value, codingPath: codingPath) }
}

// MARK: - Decoding

private struct ValueDecoder: Decoder {
    let value: PacketValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func mismatch(_ expected: Any.Type) -> DecodingError {
        .typeMismatch(expected, .init(codingPath: codingPath, debugDescription: "expected \(expected), found \(value)"))
    }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if type == Data.self {
            guard case .bytes(let bytes) = value else { throw mismatch(Data.self) }
            return Data(bytes) as! T  // T is Data
        }
        return try T(from: self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .keyed(let entries) = value else { throw mismatch([String: Any].self) }
        var byKey: [String: PacketValue] = [:]
        for entry in entries where byKey[entry.key] == nil { byKey[entry.key] = entry.value }
        return KeyedDecodingContainer(KeyedValueDecoder<Key>(entries: byKey, order: entries.map(\.key), codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .list(let values) = value else { throw mismatch([Any].self) }
        return ListValueDecoder(values: values, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValueDecoder(decoder: self) }

    func decodeBool() throws -> Bool {
        guard case .bool(let flag) = value else { throw mismatch(Bool.self) }
        return flag
    }

    func decodeString() throws -> String {
        guard case .string(let text) = value else { throw mismatch(String.self) }
        return text
    }

    func decodeFloatingPoint<T: BinaryFloatingPoint>(_ type: T.Type) throws -> T {
        switch value {
        case .double(let number): return T(number)
        case .int(let number): return T(number)
        case .uint(let number): return T(number)
        default: throw mismatch(T.self)
        }
    }

    func decodeInteger<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let number: T?
        switch value {
        case .int(let signed): number = T(exactly: signed)
        case .uint(let unsigned): number = T(exactly: unsigned)
        default: throw mismatch(T.self)
        }
        guard let number else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(value) does not fit in \(T.self)"))
        }
        return number
    }
}

private struct KeyedValueDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let entries: [String: PacketValue]
    let order: [String]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { order.compactMap { Key(stringValue: $0) } }
    func contains(_ key: Key) -> Bool { entries[key.stringValue] != nil }

    private func decoder(_ key: Key) throws -> ValueDecoder {
        guard let value = entries[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for \(key.stringValue)"))
        }
        return ValueDecoder(value: value, codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool { try decoder(key).value.isNull }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder(key).decodeBool() }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder(key).decodeString() }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decoder(key).decodeFloatingPoint(Double.self) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder(key).decodeInteger(Int.self) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder(key).decodeValue(T.self) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try decoder(key).unkeyedContainer() }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: entries["super"] ?? .null, codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try decoder(key) }
}

private struct ListValueDecoder: UnkeyedDecodingContainer {
    let values: [PacketValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0
    var count: Int? { values.count }
    var isAtEnd: Bool { currentIndex >= values.count }

    private mutating func next() throws -> ValueDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "the list has \(values.count) values"))
        }
        defer { currentIndex += 1 }
        return ValueDecoder(value: values[currentIndex], codingPath: codingPath)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, values[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next().decodeBool() }
    mutating func decode(_ type: String.Type) throws -> String { try next().decodeString() }
    mutating func decode(_ type: Double.Type) throws -> Double { try next().decodeFloatingPoint(Double.self) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next().decodeInteger(Int.self) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next().decodeInteger(UInt32.self) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decodeValue(T.self) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}

private struct SingleValueDecoder: SingleValueDecodingContainer {
    let decoder: ValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { decoder.value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try decoder.decodeBool() }
    func decode(_ type: String.Type) throws -> String { try decoder.decodeString() }
    func decode(_ type: Double.Type) throws -> Double { try decoder.decodeFloatingPoint(Double.self) }
    func decode(_ type: Float.Type) throws -> Float { try decoder.decodeFloatingPoint(Float.self) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.decodeInteger(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.decodeInteger(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.decodeInteger(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.decodeInteger(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.decodeInteger(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.decodeInteger(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.decodeInteger(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.decodeInteger(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.decodeInteger(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.decodeInteger(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(T.self) }
}
