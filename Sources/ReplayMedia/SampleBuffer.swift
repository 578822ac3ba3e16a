/// Which way up a picture is meant to be shown (a rotation tag, as on a turned device or a
/// rotated monitor): the pixels are as captured, the viewer turns them.
public enum Orientation: UInt8, Sendable, CaseIterable {
    case up = 0
    /// Turned 90° clockwise to be shown upright.
    case right = 1
    case down = 2
    /// Turned 90° counter-clockwise to be shown upright.
    case left = 3
}

/// One captured video frame with the time its content was sampled.
public struct VideoSample: Sendable {
    public var time: MediaTime
    public var pixels: PixelBuffer
    /// True when this frame repeats the previous picture because the screen did not change.
    public var isRepeat: Bool
    public var orientation: Orientation

    public init(time: MediaTime, pixels: PixelBuffer, isRepeat: Bool = false, orientation: Orientation = .up) {
        self.time = time
        self.pixels = pixels
        self.isRepeat = isRepeat
        self.orientation = orientation
    }
}

/// Which audio a buffer carries; ReplayKit keeps these apart as separate sample types.
public enum AudioSource: String, Sendable, Codable, CaseIterable {
    case app
    case microphone
}

/// Interleaved 32-bit float PCM with the monotonic time of its first frame.
public struct AudioBuffer: Sendable {
    public var source: AudioSource
    public var time: MediaTime
    public var sampleRate: Int
    public var channels: Int
    public var samples: [Float]

    public init(source: AudioSource, time: MediaTime, sampleRate: Int, channels: Int, samples: [Float]) {
        precondition(channels > 0 && samples.count % channels == 0)
        self.source = source
        self.time = time
        self.sampleRate = sampleRate
        self.channels = channels
        self.samples = samples
    }

    public var frameCount: Int { samples.count / channels }
    public var duration: MediaTime { MediaTime.samples(Int64(frameCount), rate: sampleRate) }
}

/// What flows from capture to the writer.
public enum SampleBuffer: Sendable {
    case video(VideoSample)
    case audio(AudioBuffer)
}
