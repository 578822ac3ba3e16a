public import ReplayIPC

/// replayd's one error type: what went wrong, as the wire protocol's code and a sentence the
/// person can act on. Sessions throw it, and a connection sends it to its client as is.
public struct DaemonError: Error, CustomStringConvertible, Equatable {
    public let code: ErrorCode
    public let message: String
    /// Ends the client's connection after the error is sent (a protocol violation).
    public var closing = false

    public init(code: ErrorCode, message: String, closing: Bool = false) {
        self.code = code
        self.message = message
        self.closing = closing
    }

    public var description: String { message }
}
