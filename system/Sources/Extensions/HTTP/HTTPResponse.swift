public import FoundationEssentials

/// What the server answered, after any redirects.
public struct HTTPResponse: Sendable {
    public var status: Int
    /// The last response's headers, in their order (a redirect's are not kept).
    public var headers: [HTTPField]
    public var body: [UInt8]
    /// Where the answer came from: the request's URL, or where redirects led. A relative
    /// Location is resolved against this.
    public var url: URL

    public init(status: Int, headers: [HTTPField], body: [UInt8], url: URL) {
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url
    }

    /// The first header named `name`, in any case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The body as UTF-8 text (invalid sequences replaced).
    public var text: String { String(decoding: body, as: UTF8.self) }
}
