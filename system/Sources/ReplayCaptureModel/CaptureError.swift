/// Why capture could not start or had to stop.
public struct CaptureError: Error, CustomStringConvertible, Equatable {
    public enum Code: String, Sendable {
        case noDisplay
        case missingExtension
        case connectionLost
        case contentResized
        case sharedMemory
        /// The monitor, window or region asked for is not there (or went away: a window closed).
        case areaUnavailable
        /// The hotkey cannot be had: an unknown key, another program holds it, or the desktop
        /// offers no global shortcuts.
        case hotkeyUnavailable
        /// No camera answered, or it went away.
        case cameraUnavailable
        case audioUnavailable
        case audioFailed
        /// No session bus, no ScreenCast portal on it, or the portal broke its protocol.
        case portalUnavailable
        /// The person (or the desktop's policy) said no, or closed the dialog.
        case portalDenied
        /// The portal did not answer in time: typically a dialog is waiting for a person.
        case portalTimedOut
        /// The PipeWire stream could not be opened, negotiated, or read.
        case pipeWireFailed
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
