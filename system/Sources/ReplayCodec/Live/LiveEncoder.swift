import CFFmpeg
public import ReplayMedia

/// How a live stream is encoded: H.264 rate-controlled to `videoBitRate` with a keyframe
/// every `keyframeSeconds`, and one AAC track.
public struct LiveFormat: Sendable, Equatable {
    public var width: Int
    public var height: Int
    /// What every picture is in; the stream is tagged with it.
    public var picture: PictureFormat
    public var fps: Int
    public var videoBitRate: Int
    public var keyframeSeconds: Int
    /// x264's speed/quality trade; `preset(width:height:)` by default.
    public var preset: String
    public var audioBitRate: Int
    public var sampleRate: Int
    public var channels: Int

    public init(width: Int, height: Int, picture: PictureFormat, fps: Int, videoBitRate: Int, keyframeSeconds: Int = 2, preset: String? = nil,
                audioBitRate: Int = 128_000, sampleRate: Int = 48_000, channels: Int = 2) {
        self.width = width
        self.height = height
        self.picture = picture
        self.fps = fps
        self.videoBitRate = videoBitRate
        self.keyframeSeconds = keyframeSeconds
        self.preset = preset ?? Self.preset(width: width, height: height)
        self.audioBitRate = audioBitRate
        self.sampleRate = sampleRate
        self.channels = channels
    }
}

extension LiveFormat {
    /// veryfast (what streaming tools default to) up to 720p; ultrafast above, because x264's
    /// memory grows with picture size and preset and an extension has 50 MB. Measured with
    /// zerolatency here: 720p veryfast 25 MB, 1080p veryfast 46 MB, 1080p ultrafast 30 MB.
    public static func preset(width: Int, height: Int) -> String {
        width * height <= 1280 * 720 ? "veryfast" : "ultrafast"
    }
}

/// Encodes a live stream's pictures and audio periods into packets stamped from one origin
/// (the first sample's capture time), so that sound and picture keep the sync they had on
/// the screen and in the speakers.
public final class LiveEncoder {
    public let format: LiveFormat
    let video: VideoEncoder
    let audio: AudioEncoder
    private var origin: MediaTime?
    public private(set) var videoFrames = 0

    public init(format: LiveFormat) throws(CodecError) {
        av_log_set_level(AV_LOG_ERROR)
        self.format = format
        video = try VideoEncoder(width: format.width, height: format.height, pictureFormat: format.picture,
                                 fps: format.fps, preset: format.preset,
                                 bitRate: format.videoBitRate, crf: 23, keyframeInterval: format.fps * format.keyframeSeconds, fixedKeyframes: true)
        audio = try AudioEncoder(sampleRate: format.sampleRate, channels: format.channels, bitRate: format.audioBitRate)
    }

    /// The next picture will be a keyframe.
    public func requestKeyframe() { video.keyframeRequested = true }

    /// Sets the stream's time zero; samples before it are dropped. Set by the first sample
    /// when not called.
    public func start(at time: MediaTime) {
        if origin == nil { origin = time }
    }

    /// Encodes one picture captured at `time`.
    public func encode(_ pixels: PixelBuffer, at time: MediaTime) throws(CodecError) -> [EncodedPacket] {
        start(at: time)
        guard let origin, !(time < origin) else { return [] }
        guard pixels.width == format.width, pixels.height == format.height else {
            throw CodecError(.encoderFailed, "picture is \(pixels.width)x\(pixels.height), the stream \(format.width)x\(format.height)")
        }
        var packets: [EncodedPacket] = []
        let pts = (time - origin).value(timescale: Int64(VideoEncoder.timescale))
        try video.encode(pixels, pts: pts) { packet throws(CodecError) in
            packets.append(try EncodedPacket(referencing: packet, track: .video, timeBase: video.context.pointee.time_base))
        }
        videoFrames += 1
        return packets
    }

    /// Encodes interleaved audio whose first frame was heard at `time`. The track stays gap-free
    /// (what decoders and ingest servers expect): a gap since the last audio is filled with
    /// silence (up to `maxSilence`; a longer one, audio paused, jumps the track's clock), and
    /// audio that overlaps what was already encoded loses its overlapping head.
    public func encode(audio samples: [Float], at time: MediaTime) throws(CodecError) -> [EncodedPacket] {
        start(at: time)
        guard let origin, !(time < origin) else { return [] }
        var packets: [EncodedPacket] = []
        let emit = { [audio] (packet: UnsafeMutablePointer<AVPacket>) throws(CodecError) in
            packets.append(try EncodedPacket(referencing: packet, track: .audio, timeBase: audio.context.pointee.time_base))
        }
        let channels = format.channels
        let position = (time - origin).value(timescale: Int64(format.sampleRate))
        let gap = position - audio.framesAccepted
        let tolerance = Int64(format.sampleRate / 200)  // 5 ms of timestamp jitter is not a gap
        var samples = samples
        if gap > Int64(format.sampleRate) * Self.maxSilenceSeconds {
            try audio.skip(to: position, emit: emit)
        } else if gap > tolerance {
            try audio.encode([Float](repeating: 0, count: Int(gap) * channels), emit: emit)
        } else if gap < -tolerance {
            samples.removeFirst(min(samples.count, Int(-gap) * channels))
        }
        try audio.encode(samples, emit: emit)
        return packets
    }

    /// The longest gap in the audio that is filled with silence rather than skipped.
    static let maxSilenceSeconds: Int64 = 2

    /// Everything the encoders still hold.
    public func finish() throws(CodecError) -> [EncodedPacket] {
        var packets: [EncodedPacket] = []
        try video.finish { packet throws(CodecError) in
            packets.append(try EncodedPacket(referencing: packet, track: .video, timeBase: video.context.pointee.time_base))
        }
        try audio.finish { packet throws(CodecError) in
            packets.append(try EncodedPacket(referencing: packet, track: .audio, timeBase: audio.context.pointee.time_base))
        }
        return packets
    }
}
