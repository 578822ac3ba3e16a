import FoundationEssentials

extension ProtocolError {
    /// A JSON document that does not decode as the message expected, in words that point at the field.
    public static func malformed(explaining error: any Error) -> ProtocolError {
        guard let error = error as? DecodingError else { return .malformed("\(error)") }
        return switch error {
        case .dataCorrupted(let context): .malformed("not valid JSON (\(context.debugDescription))")
        case .keyNotFound(let key, _): .malformed("missing field '\(key.stringValue)'")
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            .malformed("wrong type at '\(context.codingPath.map(\.stringValue).joined(separator: "."))'")
        @unknown default: .malformed("undecodable")
        }
    }
}
