/// Hides secrets in a line of text before anyone logs or shows it: what an upload extension and
/// its libraries print (FFmpeg names the whole URL it failed to reach, SRT's passphrase and
/// stream id included) passes through here on its way into replayd's log.
///
/// What it hides: the values given (a broadcast's secret setup fields), as they are and as a
/// URL carries them (percent-encoded); a password in a URL's user part; the value of a query
/// parameter named for a secret (`URLSecrets.parameterNames`), and of `passphrase=` and
/// `streamid=` wherever they stand; and the stream key of an RTMP URL (the path part after its
/// application). A value shorter than `shortest` cannot be told from ordinary text and is left
/// to the patterns.
public struct SecretRedaction: Sendable {
    /// What stands where a secret was.
    public static let mask = "[redacted]"
    /// The shortest value hidden by itself, wherever it stands.
    public static let shortest = 4
    /// Nothing to hide but what the patterns find.
    public static let patternsOnly = SecretRedaction(secrets: [])

    /// Every form of every secret, longest first (a secret that contains another goes whole).
    private let forms: [String]

    /// Hides `secrets` (a broadcast's secret setup values) as well as what the patterns find.
    public init(secrets: [String]) {
        var forms = Set<String>()
        for secret in secrets where secret.count >= Self.shortest {
            forms.insert(secret)
            forms.insert(Self.percentEncoded(secret, keeping: Self.unreserved))
            forms.insert(Self.percentEncoded(secret, keeping: Self.unreserved.union(Self.subDelimiters)))
        }
        self.forms = forms.sorted { $0.count > $1.count }
    }

    /// `line` with every secret it holds replaced by `mask`.
    public func redact(_ line: String) -> String {
        var text = line
        for form in forms where text.contains(form) { text = text.replacing(form, with: Self.mask) }
        guard text.contains("=") || text.contains("://") else { return text }
        text = text.replacing(Self.userPassword) { "\($0.output[1].substring ?? ""):\(Self.mask)@" }
        text = text.replacing(Self.queryParameter) { "\($0.output[1].substring ?? "")\($0.output[2].substring ?? "")=\(Self.mask)" }
        text = text.replacing(Self.srtParameter) { "\($0.output[1].substring ?? "")\($0.output[2].substring ?? "")=\(Self.mask)" }
        text = text.replacing(Self.rtmpKey) { "\($0.output[1].substring ?? "")\(Self.mask)" }
        return text
    }

    // The patterns (constant, so `try!` cannot fail at run time; the tests use each). Regex is
    // not Sendable, so each is made where it is used: a few lines a second at most.
    // Captured: what is kept around the secret.
    /// `scheme://user:password@`
    private static var userPassword: Regex<AnyRegexOutput> { try! Regex(#"([A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@?#]*):[^@\s/?#]+@"#) }
    /// `?key=…` or `&token=…`: a URL's query parameter named for a secret.
    private static var queryParameter: Regex<AnyRegexOutput> {
        try! Regex("([?&;])(" + URLSecrets.parameterNames.sorted().joined(separator: "|") + #")=[^&;\s"'<>]+"#).ignoresCase()
    }
    /// `passphrase=…` and `streamid=…` anywhere (an options list, a message), not only in a query.
    private static var srtParameter: Regex<AnyRegexOutput> { try! Regex(#"(^|[^A-Za-z0-9_])(passphrase|streamid)=[^&;\s"'<>]+"#).ignoresCase() }
    /// `rtmp://host/app/KEY`: FFmpeg's RTMP takes the stream key as the path's last part.
    private static var rtmpKey: Regex<AnyRegexOutput> { try! Regex(#"(rtmps?://[^/\s]+/[^/\s?#]+/)[^/\s?#"'<>]+"#).ignoresCase() }

    private static let unreserved = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~".utf8)
    private static let subDelimiters = Set("!$'()*+,;=:@/?".utf8)

    private static func percentEncoded(_ value: String, keeping allowed: Set<UInt8>) -> String {
        var encoded = ""
        for byte in value.utf8 {
            if allowed.contains(byte) {
                encoded.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                encoded += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return encoded
    }
}
