package import FoundationEssentials
package import ReplayIPC
import ReplayMedia
package import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// What replayd tells a capture process (`replay-capture`), one packet each (`PacketCoding`).
package enum CaptureCommand: Codable, Sendable, Equatable {
    /// The first packet: what to record. The movie file (for `.store`) rides on it.
    case start(CaptureStart)
    case pause
    case resume
    case stop
    /// Ends the recording for this reason (an app over its share of the disk); it is kept.
    case end(because: String)
    /// Saves a clip buffer's last `seconds` (nil: all of it) as recording `id`, into the file
    /// that rides on the packet.
    case saveClip(seconds: Double?, trigger: ClipSaveRecord.Trigger, id: String)
    /// The windows apps protect now: painted black from the next picture on.
    case protectedWindows([UInt32])
    /// The first packet of an in-app capture (instead of `start`): an app's own windows,
    /// streamed back to replayd through shared memory.
    case startAppCapture(AppCaptureStart)
    /// replayd has sent the picture in `slot` on to the app: the slot may be written again.
    /// For a broadcast: the extension is done with surface `slot` (for the audio ring, with
    /// its oldest period), or the picture in it was not sent.
    case releaseFrame(slot: Int)
    /// The first packet of a broadcast's capture: open the display and make the shared surfaces.
    case startBroadcastCapture(BroadcastCaptureStart)
    /// The extension is ready: capture starts, and samples come as `broadcastSample`.
    case broadcastLive
    /// The sound period at `offset` in the audio ring was not sent: its place is free again.
    case releaseAudio(offset: Int)
}

/// What a capture process needs to know to capture one broadcast (`BroadcastCapture`).
package struct BroadcastCaptureStart: Codable, Sendable, Equatable {
    package var id: String
    package var options: BroadcastCaptureOptions
    package var backend: CaptureStart.Backend
    package var protectedWindows: [UInt32]

    package init(id: String, options: BroadcastCaptureOptions, backend: CaptureStart.Backend, protectedWindows: [UInt32]) {
        self.id = id
        self.options = options
        self.backend = backend
        self.protectedWindows = protectedWindows
    }
}

/// What a capture process needs to know to stream an app's own windows (everything else
/// black), as `replay-capture` does for in-app capture.
package struct AppCaptureStart: Codable, Sendable, Equatable {
    package var id: String
    package var pid: Int32
    package var fps: Int
    package var showCursor: Bool
    package var backend: CaptureStart.Backend
    package var protectedWindows: [UInt32]
    /// The whole screen (protected windows black) rather than `pid`'s windows: what a consent
    /// dialog shows of a screen recording's request.
    package var wholeScreen: Bool?

    package init(id: String, pid: Int32, fps: Int, showCursor: Bool, backend: CaptureStart.Backend, protectedWindows: [UInt32],
                 wholeScreen: Bool? = nil) {
        self.wholeScreen = wholeScreen
        self.id = id
        self.pid = pid
        self.fps = fps
        self.showCursor = showCursor
        self.backend = backend
        self.protectedWindows = protectedWindows
    }
}

/// Everything a capture process needs to know to run one session.
package struct CaptureStart: Codable, Sendable, Equatable {
    package var id: String
    package var options: RecordingOptions
    package var destination: RecordingDestination
    /// An app's own pid for a capture of its own windows only; nil for the whole screen.
    package var onlyProcess: Int32?
    package var backend: Backend
    package var protectedWindows: [UInt32]

    package enum Backend: Codable, Sendable, Equatable {
        /// The X display (nil: `$DISPLAY`).
        case x11(display: String?)
        /// The ScreenCast portal, with the person's earlier choice for this kind of source.
        case portal(restoreToken: String?, dialogTimeout: Double)
    }

    package init(id: String, options: RecordingOptions, destination: RecordingDestination, onlyProcess: Int32?,
                 backend: Backend, protectedWindows: [UInt32]) {
        self.id = id
        self.options = options
        self.destination = destination
        self.onlyProcess = onlyProcess
        self.backend = backend
        self.protectedWindows = protectedWindows
    }
}

/// What a capture process tells replayd, one packet each (`PacketCoding`).
package enum CaptureReport: Codable, Sendable, Equatable {
    /// The answer to `start`: capturing, or why not (then the process exits).
    case started(RecordingStarted)
    case startFailed(code: ErrorCode, message: String)
    /// The answer to `pause`, `resume` and `saveClip`, in the order they were asked.
    case done
    case clipSaved(ClipSaved)
    case refused(code: ErrorCode, message: String)
    /// Where the session is, twice a second and at each change.
    case status(CaptureProcessStatus)
    /// A recording's entry to list or update in the store (the session's own, or a clip's).
    case entry(RecordingInfo)
    /// A recording to forget (a movie with no picture is never kept).
    case discard(id: String)
    /// The movie is closed; the process exits next.
    case finished(RecordingSummary)
    /// The answer to `startAppCapture`: the pictures' size, and the shared memory they come
    /// in (its descriptor rides on the packet): `slots` slots of `slotSize` bytes each.
    case appCaptureStarted(width: Int, height: Int, slots: Int, slotSize: Int, restoreToken: String? = nil)
    /// A picture, `bytes` long at the start of `slot`, until replayd says `releaseFrame`.
    case frame(slot: Int, bytes: Int, time: Double, width: Int, height: Int)
    /// The in-app capture is over (why, when it failed), with its counts; the process exits next.
    case appCaptureEnded(error: String?, captured: Int, dropped: Int)
    /// The answer to `startBroadcastCapture`: the pictures' size and the shared surfaces, whose
    /// read-only descriptors ride on the packet (video surfaces first, the audio ring last),
    /// each `surfaceSize` bytes; and the portal's token for the person's choice, when it asked.
    case broadcastCaptureOpened(width: Int, height: Int, surfaceSize: Int, restoreToken: String?)
    /// One sample: the extension message (`BroadcastCodec`, framed) that names its place in
    /// the surfaces, which replayd checks and sends on.
    case broadcastSample(Data)
    /// The broadcast's capture is over (why, when it failed); the process exits next.
    case broadcastCaptureEnded(error: String?)
}

package struct CaptureProcessStatus: Codable, Sendable, Equatable {
    package var phase: SessionPhase
    package var progress: RecordingProgress
    package var clips: ClipStatus?
    /// The newest restore token the portal returned (the person's choice, kept by replayd).
    package var restoreToken: String?

    package init(phase: SessionPhase, progress: RecordingProgress, clips: ClipStatus?, restoreToken: String?) {
        self.phase = phase
        self.progress = progress
        self.clips = clips
        self.restoreToken = restoreToken
    }
}

/// One end of the SOCK_SEQPACKET pair between replayd and a capture process: a packet is one
/// message, so a message is never read in part; descriptors ride on the packet they belong to.
package struct CaptureChannel: Sendable {
    package let descriptor: Int32
    /// Far larger than any message; a bigger packet is a broken peer.
    static let maxPacket = 256 << 10
    /// A packet carries at most a broadcast's surfaces (its video surfaces and the audio ring).
    static let maxDescriptors = 8

    package init(descriptor: Int32) { self.descriptor = descriptor }

    /// A connected pair, close-on-exec: (replayd's end, the capture process's end).
    package static func pair() throws(SystemError) -> (CaptureChannel, CaptureChannel) {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw SystemError(call: "socketpair", errno: errno)
        }
        return (CaptureChannel(descriptor: ends[0]), CaptureChannel(descriptor: ends[1]))
    }

    package func send(_ message: some Encodable, descriptors: [Int32] = []) throws(SystemError) {
        guard let bytes = try? PacketCoding.encode(message) else { throw SystemError(call: "encode", errno: EINVAL) }
        try DescriptorPassing.send(socket: descriptor, bytes: bytes, descriptors: descriptors)
    }

    /// The next message and the descriptors on it; nil at the end (the peer closed, or sent
    /// what is no message of this channel: either way the channel is done).
    package func receive<Message: Decodable>(_ type: Message.Type) -> (Message, [Int32])? {
        guard let (bytes, descriptors) = try? DescriptorPassing.receive(socket: descriptor, maxBytes: Self.maxPacket,
                                                                        maxDescriptors: Self.maxDescriptors),
              !bytes.isEmpty else { return nil }
        guard let message = try? PacketCoding.decode(Message.self, from: bytes) else {
            descriptors.forEach { Glibc.close($0) }
            return nil
        }
        return (message, descriptors)
    }

    /// Whether a message (or the end) is waiting: a read now would not block.
    package var hasPending: Bool { FileDescriptor.isReadable(descriptor) }

    package func close() { _ = Glibc.close(descriptor) }
}
