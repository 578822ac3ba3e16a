/// One captured video frame with the time its content was sampled.
public struct VideoSample: Sendable {
    public var time: MediaTime
    public var pixels: PixelBuffer
    /// True when this frame repeats the previous picture because the screen did not change.
    public var isRepeat: Bool

    public init(time: MediaTime, pixels: PixelBuffer, isRepeat: Bool = false) {
        self.time = time
        self.pixels = pixels
        self.isRepeat = isRepeat
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
