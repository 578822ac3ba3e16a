/// Which way up a picture is meant to be shown (a rotation tag, as on a turned device or a
/// rotated monitor): the pixels are as captured, the viewer turns them.
public enum Orientation: UInt8, Sendable, CaseIterable {
    /// Shown as captured.
    case up = 0
    /// Turned 90° clockwise to be shown upright.
    case right = 1
    /// Upside down: turned 180° to be shown upright.
    case down = 2
    /// Turned 90° counter-clockwise to be shown upright.
    case left = 3

    /// Turned a quarter: width and height trade places.
    public var swapsAxes: Bool { self == .right || self == .left }
}

/// One captured video frame with the time its content was sampled.
public struct VideoSample: Sendable {
    /// When the picture was taken, on `CLOCK_MONOTONIC` (the clock audio is stamped on too).
    public var time: MediaTime
    /// The picture, in the format it says (`pixels.format`); read-only.
    public var pixels: PixelBuffer
    /// True when this frame repeats the previous picture because the screen did not change.
    public var isRepeat: Bool
    /// Which way up to show it.
    public var orientation: Orientation

    /// A sample of `pixels` taken at `time`.
    public init(time: MediaTime, pixels: PixelBuffer, isRepeat: Bool = false, orientation: Orientation = .up) {
        self.time = time
        self.pixels = pixels
        self.isRepeat = isRepeat
        self.orientation = orientation
    }
}

/// Which audio a buffer carries; ReplayKit keeps these apart as separate sample types.
public enum AudioSource: String, Sendable, Codable, CaseIterable {
    /// What the computer plays (the default output's monitor): ReplayKit's `audioApp`.
    case app
    /// The default input: ReplayKit's `audioMic`.
    case microphone
}

/// Interleaved 32-bit float PCM with the monotonic time of its first frame.
public struct AudioBuffer: Sendable {
    /// Whose sound this is.
    public var source: AudioSource
    /// When the first frame was heard, on `CLOCK_MONOTONIC`.
    public var time: MediaTime
    /// Frames per second (replayd sends 48 000).
    public var sampleRate: Int
    /// Samples per frame (replayd sends 2: left, right).
    public var channels: Int
    /// `frameCount × channels` samples, interleaved, from -1 to 1.
    public var samples: [Float]

    /// A buffer of whole frames: `samples.count` must be a multiple of `channels`.
    public init(source: AudioSource, time: MediaTime, sampleRate: Int, channels: Int, samples: [Float]) {
        precondition(channels > 0 && samples.count % channels == 0)
        self.source = source
        self.time = time
        self.sampleRate = sampleRate
        self.channels = channels
        self.samples = samples
    }

    /// Frames in the buffer (samples per channel).
    public var frameCount: Int { samples.count / channels }
    /// How long the buffer plays.
    public var duration: MediaTime { MediaTime.samples(Int64(frameCount), rate: sampleRate) }
}

/// One sample, saying itself what it is (ReplayKit's sample buffer and its type, in one
/// value): what flows from capture to the writer, and what an extension's handler receives.
public enum SampleBuffer: Sendable {
    /// A picture.
    case video(VideoSample)
    /// A period of the app's or the microphone's sound (`AudioBuffer.source` says which).
    case audio(AudioBuffer)
}
