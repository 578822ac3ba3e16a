/// Why capture could not start or had to stop.
public struct CaptureError: Error, CustomStringConvertible, Equatable {
    public enum Code: String, Sendable {
        case noDisplay
        case missingExtension
        case connectionLost
        case contentResized
        case sharedMemory
        case audioUnavailable
        case audioFailed
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
