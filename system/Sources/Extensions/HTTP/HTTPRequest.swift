public import FoundationEssentials

/// One HTTP request: what `HTTPClient.send` sends.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: URL
    /// Sent in this order, after libcurl's own (Host, and Content-Length with a body).
    public var headers: [HTTPField]
    public var body: [UInt8]
    /// The whole exchange's limit, in seconds: connecting, sending and receiving.
    public var timeout: Double

    public init(method: String, url: URL, headers: [HTTPField] = [], body: [UInt8] = [], timeout: Double = 20) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    /// What libcurl would send otherwise: a header split by a line break, a method it would
    /// take as more than a word.
    func validate() throws(HTTPError) {
        guard !method.isEmpty, method.allSatisfy({ $0.isLetter && $0.isASCII }) else {
            throw HTTPError(.invalidRequest, "the method \(method) is not a word of letters")
        }
        guard ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
            throw HTTPError(.invalidRequest, "only http:// and https:// addresses are sent, not \(url.scheme ?? "none")")
        }
        guard timeout > 0 else { throw HTTPError(.invalidRequest, "the timeout must be more than 0 s") }
        for field in headers {
            guard !field.name.isEmpty, !field.name.contains(where: { $0 == ":" || $0.isWhitespace || $0.isNewline }) else {
                throw HTTPError(.invalidRequest, "the header name \(field.name) is not a token")
            }
            // The value is not quoted: it may be a secret (a token).
            guard !field.value.contains(where: \.isNewline), !field.value.contains("\0") else {
                throw HTTPError(.invalidRequest, "the value of the header \(field.name) holds a line break")
            }
        }
    }
}

/// A header: its name as it is sent, or as it was received.
public struct HTTPField: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
