/// Why a request got no answer: no connection, no answer in time, cancelled, TLS refused,
/// or a request that was never sent. An answer with any status is not an error.
public struct HTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        public var description: String { name }
        /// The server's address does not resolve.
        public static let couldNotResolve = Code(name: "couldNotResolve")
        /// Nothing accepted the connection (refused, unreachable, or not within the timeout).
        public static let couldNotConnect = Code(name: "couldNotConnect")
        /// No whole answer within the request's timeout.
        public static let timedOut = Code(name: "timedOut")
        /// `HTTPClient.cancel` ended it.
        public static let cancelled = Code(name: "cancelled")
        /// TLS failed: a certificate the system does not trust, or no common protocol.
        public static let tls = Code(name: "tls")
        /// The body is larger than `HTTPClient.maximumBodySize`.
        public static let tooLarge = Code(name: "tooLarge")
        /// Not sent: the request itself is wrong.
        public static let invalidRequest = Code(name: "invalidRequest")
        /// Anything else libcurl reports (the connection dropped, a malformed answer…).
        public static let failed = Code(name: "failed")
    }

    public let code: Code
    /// What happened, in libcurl's words where they are its (they name the host and port,
    /// never the query or a header).
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
