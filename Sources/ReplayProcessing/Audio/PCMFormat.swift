/// How raw PCM bytes are laid out when a capture source or an extension hands them over.
///
/// Endianness is part of the format rather than assumed: ReplayKit delivered app audio
/// big-endian and the microphone little-endian (iOS 12, 44.1 kHz mono both), and a pipeline
/// that guessed would turn one of them into full-scale noise.
public struct PCMFormat: Sendable, Hashable, CustomStringConvertible {
    public enum Encoding: Sendable, Hashable, CaseIterable {
        case float32
        case int16
        case int32

        public var bytesPerSample: Int {
            switch self {
            case .int16: 2
            case .float32, .int32: 4
            }
        }
    }

    public enum Endianness: Sendable, Hashable, CaseIterable {
        case little
        case big

        /// The byte order of this machine.
        public static var host: Endianness { 1.littleEndian == 1 ? .little : .big }
    }

    public var sampleRate: Int
    public var channels: Int
    public var encoding: Encoding
    public var endianness: Endianness
    /// False for planar input: every frame of channel 0, then every frame of channel 1, ...
    public var interleaved: Bool

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

    public var description: String {
        "\(channels) ch, \(sampleRate) Hz, \(encoding), \(endianness)-endian, \(interleaved ? "interleaved" : "planar")"
    }
}
