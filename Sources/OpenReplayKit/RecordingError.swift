import ReplayIPC

/// Why a recording, capture or preview did not happen, modelled on ReplayKit's
/// RPRecordingErrorCode, with a message a person can act on.
public struct RecordingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as a word. Not an enum: later releases add codes, and an app's
    /// `switch` over them keeps compiling (it needs a `default:`), as with swift-system's
    /// `Errno` and swift-nio's error codes. Compare with the static members.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let unknown = Code(rawValue: "unknown")
        /// The person (or the consent policy) said no, or nobody was there to ask.
        public static let userDeclined = Code(rawValue: "userDeclined")
        public static let failedToStart = Code(rawValue: "failedToStart")
        /// The daemon, the display or the connection went away.
        public static let interrupted = Code(rawValue: "interrupted")
        /// The screen changed size; what was recorded before is kept.
        public static let contentResize = Code(rawValue: "contentResize")
        public static let insufficientStorage = Code(rawValue: "insufficientStorage")
        public static let attemptToStartInRecordingState = Code(rawValue: "attemptToStartInRecordingState")
        public static let attemptToStopNonRecording = Code(rawValue: "attemptToStopNonRecording")
        public static let failedToShowPreview = Code(rawValue: "failedToShowPreview")
        public static let failedToDiscardRecording = Code(rawValue: "failedToDiscardRecording")
        /// A clip could not be saved or written (ReplayKit's clip export failures).
        public static let failedToSaveClip = Code(rawValue: "failedToSaveClip")
        /// replayd is not running or not reachable.
        public static let systemDormancy = Code(rawValue: "systemDormancy")
        public static let notPermitted = Code(rawValue: "notPermitted")
        /// A limit on what one app may hold at once: captures running, clip buffers' memory,
        /// consent prompts waiting, the store's share of the disk. Try again once one ends.
        public static let quotaExceeded = Code(rawValue: "quotaExceeded")
        /// The task was cancelled: the call returned at once and hung up its connection to
        /// replayd (which ends what that connection was starting).
        public static let cancelled = Code(rawValue: "cancelled")
        /// The running replayd is older than this SDK and does not know what was asked.
        public static let unsupported = Code(rawValue: "unsupported")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// Translates the daemon's refusal; `fallback` names what was being tried (and stands for
    /// a code of the daemon's this SDK does not know).
    init(daemon code: ErrorCode, message: String, fallback: Code) {
        switch code {
        case .userDeclined: self.init(.userDeclined, message)
        case .notPermitted: self.init(.notPermitted, message)
        case .insufficientStorage: self.init(.insufficientStorage, message)
        case .quotaExceeded: self.init(.quotaExceeded, message)
        case .failedToShowPreview: self.init(.failedToShowPreview, message)
        case .unsupported: self.init(.unsupported, message)
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
