import OpenReplayKit

/// The C interface's status codes (`ork_status` in openreplaykit.h): 0 is success, 1 … 9
/// misuse of the interface, 10 and up the SDK's `RecordingError.Code`s. Numbers never change.
enum CStatus: Int32, CaseIterable {
    case ok = 0
    case invalidArgument = 1
    case invalidHandle = 2
    case unknown = 10
    case userDeclined = 11
    case failedToStart = 12
    case interrupted = 13
    case contentResize = 14
    case insufficientStorage = 15
    case alreadyRunning = 16
    case notRunning = 17
    case failedToShowPreview = 18
    case failedToDiscardRecording = 19
    case failedToSaveClip = 20
    case noDaemon = 21
    case notPermitted = 22
    case quotaExceeded = 23
    case cancelled = 24
    case unsupported = 25

    init(_ code: RecordingError.Code) {
        switch code {
        case .userDeclined: self = .userDeclined
        case .failedToStart: self = .failedToStart
        case .interrupted: self = .interrupted
        case .contentResize: self = .contentResize
        case .insufficientStorage: self = .insufficientStorage
        case .attemptToStartInRecordingState: self = .alreadyRunning
        case .attemptToStopNonRecording: self = .notRunning
        case .failedToShowPreview: self = .failedToShowPreview
        case .failedToDiscardRecording: self = .failedToDiscardRecording
        case .failedToSaveClip: self = .failedToSaveClip
        case .systemDormancy: self = .noDaemon
        case .notPermitted: self = .notPermitted
        case .quotaExceeded: self = .quotaExceeded
        case .cancelled: self = .cancelled
        case .unsupported: self = .unsupported
        default: self = .unknown
        }
    }

    /// The enumerator's name in the header, as `ork_status_name` returns it.
    var name: String {
        switch self {
        case .ok: "ORK_OK"
        case .invalidArgument: "ORK_ERROR_INVALID_ARGUMENT"
        case .invalidHandle: "ORK_ERROR_INVALID_HANDLE"
        case .unknown: "ORK_ERROR_UNKNOWN"
        case .userDeclined: "ORK_ERROR_USER_DECLINED"
        case .failedToStart: "ORK_ERROR_FAILED_TO_START"
        case .interrupted: "ORK_ERROR_INTERRUPTED"
        case .contentResize: "ORK_ERROR_CONTENT_RESIZE"
        case .insufficientStorage: "ORK_ERROR_INSUFFICIENT_STORAGE"
        case .alreadyRunning: "ORK_ERROR_ALREADY_RUNNING"
        case .notRunning: "ORK_ERROR_NOT_RUNNING"
        case .failedToShowPreview: "ORK_ERROR_FAILED_TO_SHOW_PREVIEW"
        case .failedToDiscardRecording: "ORK_ERROR_FAILED_TO_DISCARD_RECORDING"
        case .failedToSaveClip: "ORK_ERROR_FAILED_TO_SAVE_CLIP"
        case .noDaemon: "ORK_ERROR_NO_DAEMON"
        case .notPermitted: "ORK_ERROR_NOT_PERMITTED"
        case .quotaExceeded: "ORK_ERROR_QUOTA_EXCEEDED"
        case .cancelled: "ORK_ERROR_CANCELLED"
        case .unsupported: "ORK_ERROR_UNSUPPORTED"
        }
    }
}

/// A failed call: its status and a message a person can act on.
struct CFailure: Error {
    let status: CStatus
    let message: String

    init(_ status: CStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    init(_ error: RecordingError) {
        self.init(CStatus(error.code), error.message)
    }
}
