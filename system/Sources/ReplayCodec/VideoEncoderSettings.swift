public import ReplayMedia

/// How a video stream was encoded: enough to open an encoder whose parameter sets (SPS, PPS)
/// are the stream's own, so that pictures it encodes can be spliced into the stream. Movies
/// carry it as a tag (`tagKey`); MP4 keeps no free-form tags on a track, so it is the
/// movie's, and it describes the movie's video track.
public struct VideoEncoderSettings: Sendable, Equatable {
    /// The movie metadata key the settings are stored under.
    public static let tagKey = "org.openreplaykit.video-encoder"

    public var codec: VideoCodec
    public var preset: String
    public var bitRate: Int?
    public var crf: Int
    public var quality: VideoQuality?
    public var keyframeInterval: Int?
    public var fixedKeyframes: Bool
    public var frameRateMode: FrameRateMode
    public var fps: Int

    public init(codec: VideoCodec = .h264, preset: String = "ultrafast", bitRate: Int? = nil, crf: Int = 23, quality: VideoQuality? = nil,
                keyframeInterval: Int? = nil, fixedKeyframes: Bool = false, frameRateMode: FrameRateMode = .vfr, fps: Int) {
        self.codec = codec
        self.preset = preset
        self.bitRate = bitRate
        self.crf = crf
        self.quality = quality
        self.keyframeInterval = keyframeInterval
        self.fixedKeyframes = fixedKeyframes
        self.frameRateMode = frameRateMode
        self.fps = fps
    }

    /// `codec=h264 preset=ultrafast crf=23 rate=vfr fps=30 …`: space-separated `key=value`s;
    /// tune is always zerolatency and there are never B-frames (`VideoEncoder`).
    public var tag: String {
        var fields = ["codec=\(codec.rawValue)", "preset=\(preset)", "crf=\(crf)", "rate=\(frameRateMode.rawValue)", "fps=\(fps)"]
        if let bitRate { fields.append("bitrate=\(bitRate)") }
        if let quality { fields.append("quality=\(quality.rawValue)") }
        if let keyframeInterval { fields.append("keyint=\(keyframeInterval)") }
        if fixedKeyframes { fields.append("fixedkeys=1") }
        return fields.joined(separator: " ")
    }

    /// Reads `tag`; nil when it is not one (another program's, a field missing or unknown).
    public init?(tag: String) {
        var fields: [String: String] = [:]
        for field in tag.split(separator: " ") {
            let parts = field.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            fields[String(parts[0])] = String(parts[1])
        }
        guard let codec = fields["codec"].flatMap(VideoCodec.init(rawValue:)), let preset = fields["preset"],
              let crf = fields["crf"].flatMap({ Int($0) }), let rate = fields["rate"].flatMap(FrameRateMode.init(rawValue:)),
              let fps = fields["fps"].flatMap({ Int($0) }), fps > 0 else { return nil }
        let known: Set = ["codec", "preset", "crf", "rate", "fps", "bitrate", "quality", "keyint", "fixedkeys"]
        guard fields.keys.allSatisfy(known.contains) else { return nil }
        self.init(codec: codec, preset: preset, bitRate: fields["bitrate"].flatMap { Int($0) }, crf: crf,
                  quality: fields["quality"].flatMap(VideoQuality.init(rawValue:)), keyframeInterval: fields["keyint"].flatMap { Int($0) },
                  fixedKeyframes: fields["fixedkeys"] == "1", frameRateMode: rate, fps: fps)
    }
}
