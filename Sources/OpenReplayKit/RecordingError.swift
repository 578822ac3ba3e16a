import ReplayIPC

/// Why a recording, capture or preview did not happen, modelled on ReplayKit's
/// RPRecordingErrorCode, with a message a person can act on.
public struct RecordingError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        case unknown
        /// The person (or the consent policy) said no, or nobody was there to ask.
        case userDeclined
        case failedToStart
        /// The daemon, the display or the connection went away.
        case interrupted
        /// The screen changed size; what was recorded before is kept.
        case contentResize
        case insufficientStorage
        case attemptToStartInRecordingState
        case attemptToStopNonRecording
        case failedToShowPreview
        case failedToDiscardRecording
        /// A clip could not be saved or written (ReplayKit's clip export failures).
        case failedToSaveClip
        /// replayd is not running or not reachable.
        case systemDormancy
        case notPermitted
        /// A limit on what one app may hold at once: captures running, clip buffers' memory,
        /// consent prompts waiting, the store's share of the disk. Try again once one ends.
        case quotaExceeded
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// Translates the daemon's refusal; `fallback` names what was being tried.
    init(daemon code: ErrorCode, message: String, fallback: Code) {
        switch code {
        case .userDeclined: self.init(.userDeclined, message)
        case .notPermitted: self.init(.notPermitted, message)
        case .insufficientStorage: self.init(.insufficientStorage, message)
        case .quotaExceeded: self.init(.quotaExceeded, message)
        case .failedToShowPreview: self.init(.failedToShowPreview, message)
        case .busy where fallback == .failedToStart: self.init(.attemptToStartInRecordingState, message)
        default: self.init(fallback, message)
        }
    }

    /// Why a recording that ended by itself ended.
    init(recordingEnded message: String) {
        if message.contains("content resized") {
            self.init(.contentResize, message)
        } else if message.contains("No space") || message.contains("disk") {
            self.init(.insufficientStorage, message)
        } else {
            self.init(.interrupted, message)
        }
    }
}
