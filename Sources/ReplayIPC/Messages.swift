/// What a client asks of replayd.
public enum ClientRequest: Codable, Sendable, Equatable {
    /// Starts a recording on this connection; the daemon answers with `recordingStarted`,
    /// then `progress` about once a second, then `recordingFinished`.
    case startRecording(RecordingOptions)
    /// Stops the recording this connection started, keeping it.
    case stopRecording
    case listRecordings
    /// Streams a recording back as `exportBegin`, `exportChunk`s with the bytes as body, `exportEnd`.
    case exportRecording(id: String)
    case status
}

public struct RecordingOptions: Codable, Sendable, Equatable {
    /// Stop by itself after this long; nil records until `stopRecording`.
    public var duration: Double?
    public var fps: Int
    public var microphone: Bool
    public var appAudio: Bool
    public var showCursor: Bool
    public var video: VideoEncoding

    public init(duration: Double? = nil, fps: Int = 30, microphone: Bool = false, appAudio: Bool = true,
                showCursor: Bool = true, video: VideoEncoding = .default) {
        self.duration = duration
        self.fps = fps
        self.microphone = microphone
        self.appAudio = appAudio
        self.showCursor = showCursor
        self.video = video
    }
}

/// H.264 settings. The default favours low CPU: screen content compresses well even at `ultrafast`.
public struct VideoEncoding: Codable, Sendable, Equatable {
    public var preset: String
    /// Target bit rate in bits per second; nil uses constant quality (`crf`).
    public var bitRate: Int?
    public var crf: Int
    /// Frames between keyframes; nil means one per second.
    public var keyframeInterval: Int?

    public init(preset: String = "ultrafast", bitRate: Int? = nil, crf: Int = 23, keyframeInterval: Int? = nil) {
        self.preset = preset
        self.bitRate = bitRate
        self.crf = crf
        self.keyframeInterval = keyframeInterval
    }

    public static let `default` = VideoEncoding()
}

/// What replayd tells a client.
public enum DaemonEvent: Codable, Sendable, Equatable {
    case recordingStarted(RecordingStarted)
    case progress(RecordingProgress)
    case recordingFinished(RecordingSummary)
    case recordings([RecordingInfo])
    case exportBegin(size: Int64)
    case exportChunk
    case exportEnd
    case status(DaemonStatus)
    /// The request failed; the daemon closes the connection after a protocol error.
    case error(code: ErrorCode, message: String)
}

public enum ErrorCode: String, Codable, Sendable {
    case malformedRequest
    case busy
    case notFound
    case captureFailed
    case internalError
}

public struct RecordingStarted: Codable, Sendable, Equatable {
    public var id: String
    public var width: Int
    public var height: Int
    /// Problems that did not stop the recording, such as no audio server.
    public var warnings: [String]

    public init(id: String, width: Int, height: Int, warnings: [String]) {
        self.id = id
        self.width = width
        self.height = height
        self.warnings = warnings
    }
}

public struct RecordingProgress: Codable, Sendable, Equatable {
    public var elapsed: Double
    public var frames: Int
    public var dropped: Int
    public var bytes: Int64

    public init(elapsed: Double, frames: Int, dropped: Int, bytes: Int64) {
        self.elapsed = elapsed
        self.frames = frames
        self.dropped = dropped
        self.bytes = bytes
    }
}

public struct RecordingSummary: Codable, Sendable, Equatable {
    public var id: String
    public var duration: Double
    public var frames: Int
    public var dropped: Int
    /// Why the recording ended early; what was recorded before it is kept.
    public var error: String?

    public init(id: String, duration: Double, frames: Int, dropped: Int, error: String?) {
        self.id = id
        self.duration = duration
        self.frames = frames
        self.dropped = dropped
        self.error = error
    }
}

public struct RecordingInfo: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        case recording
        case complete
        /// Ended by a fault (disk full, content resized, daemon killed); what was written is playable.
        case interrupted
    }

    public var id: String
    public var created: Double
    public var state: State
    public var duration: Double
    public var frames: Int
    public var dropped: Int
    public var width: Int
    public var height: Int
    public var bytes: Int64
    public var error: String?

    public init(id: String, created: Double, state: State, duration: Double, frames: Int, dropped: Int,
                width: Int, height: Int, bytes: Int64, error: String?) {
        self.id = id
        self.created = created
        self.state = state
        self.duration = duration
        self.frames = frames
        self.dropped = dropped
        self.width = width
        self.height = height
        self.bytes = bytes
        self.error = error
    }
}

public struct DaemonStatus: Codable, Sendable, Equatable {
    public var pid: Int32
    public var display: String?
    public var activeRecordings: [String]

    public init(pid: Int32, display: String?, activeRecordings: [String]) {
        self.pid = pid
        self.display = display
        self.activeRecordings = activeRecordings
    }
}
