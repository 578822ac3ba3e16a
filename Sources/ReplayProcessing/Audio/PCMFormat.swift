/// How raw PCM bytes are laid out when a capture source or an extension hands them over.
///
/// Endianness is part of the format rather than assumed: ReplayKit delivered app audio
/// big-endian and the microphone little-endian (iOS 12, 44.1 kHz mono both), and a pipeline
/// that guessed would turn one of them into full-scale noise.
public struct PCMFormat: Sendable, Hashable, CustomStringConvertible {
    /// How one sample is stored.
    public enum Encoding: Sendable, Hashable, CaseIterable {
        /// IEEE 754 single precision, -1 to 1.
        case float32
        /// Signed 16-bit integer, full scale ±32768.
        case int16
        /// Signed 32-bit integer, full scale ±2^31.
        case int32

        /// Bytes one sample takes (2 or 4).
        public var bytesPerSample: Int {
            switch self {
            case .int16: 2
            case .float32, .int32: 4
            }
        }
    }

    /// The byte order of each sample.
    public enum Endianness: Sendable, Hashable, CaseIterable {
        /// Least significant byte first (x86, ARM Linux).
        case little
        /// Most significant byte first.
        case big

        /// The byte order of this machine.
        public static var host: Endianness { 1.littleEndian == 1 ? .little : .big }
    }

    /// Frames per second.
    public var sampleRate: Int
    /// Samples per frame.
    public var channels: Int
    /// How one sample is stored.
    public var encoding: Encoding
    /// The byte order of each sample.
    public var endianness: Endianness
    /// False for planar input: every frame of channel 0, then every frame of channel 1, ...
    public var interleaved: Bool

    /// A layout; Float32, little-endian, interleaved unless said otherwise.
    public init(sampleRate: Int, channels: Int, encoding: Encoding = .float32,
                endianness: Endianness = .little, interleaved: Bool = true) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.encoding = encoding
        self.endianness = endianness
        self.interleaved = interleaved
    }

    /// Bytes one frame (one sample of every channel) takes.
    public var bytesPerFrame: Int { encoding.bytesPerSample * channels }

    /// "2 ch, 48000 Hz, float32, little-endian, interleaved", for logs and errors.
    public var description: String {
        "\(channels) ch, \(sampleRate) Hz, \(encoding), \(endianness)-endian, \(interleaved ? "interleaved" : "planar")"
    }
}
