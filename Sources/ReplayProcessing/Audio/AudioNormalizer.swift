public import ReplayMedia

/// Turns raw PCM in any `PCMFormat` into the pipeline's one representation: interleaved,
/// host-endian Float32 in [-1, 1] (`AudioBuffer`), so nothing downstream looks at bytes.
public enum AudioNormalizer {
    /// Why a buffer's description cannot be trusted: its samples are refused, not guessed at.
    public enum Error: Swift.Error, Equatable, CustomStringConvertible {
        /// A rate of zero or less (Hz).
        case invalidSampleRate(Int)
        /// A channel count of zero or less.
        case invalidChannelCount(Int)
        /// The byte count is not a whole number of frames: a truncated or misdescribed buffer,
        /// refused rather than decoded with every later sample shifted into the wrong channel.
        case partialFrame(byteCount: Int, bytesPerFrame: Int)

        /// The reason in words, for logs and errors.
        public var description: String {
            switch self {
            case .invalidSampleRate(let rate): "invalid sample rate \(rate) Hz"
            case .invalidChannelCount(let channels): "invalid channel count \(channels)"
            case .partialFrame(let count, let frame):
                "\(count) bytes is not a whole number of \(frame)-byte frames (\(count % frame) bytes left over)"
            }
        }
    }

    /// Decodes `bytes` described by `format`; `time` is the monotonic time of the first frame.
    public static func normalize(bytes: UnsafeRawBufferPointer, format: PCMFormat, time: MediaTime,
                                 source: AudioSource) throws(Error) -> AudioBuffer {
        let frames = try frameCount(bytes.count, format)
        let samples = decode(bytes, format: format, frames: frames)
        return AudioBuffer(source: source, time: time, sampleRate: format.sampleRate, channels: format.channels,
                           samples: samples)
    }

    /// The same for any byte collection (`[UInt8]`, `Data`, a slice); contiguous storage is
    /// read in place, anything else is copied once.
    public static func normalize(bytes: some Collection<UInt8>, format: PCMFormat, time: MediaTime,
                                 source: AudioSource) throws(Error) -> AudioBuffer {
        let frames = try frameCount(bytes.count, format)
        let samples = bytes.withContiguousStorageIfAvailable { decode(UnsafeRawBufferPointer($0), format: format, frames: frames) }
            ?? Array(bytes).withUnsafeBytes { decode($0, format: format, frames: frames) }
        return AudioBuffer(source: source, time: time, sampleRate: format.sampleRate, channels: format.channels,
                           samples: samples)
    }

    private static func frameCount(_ byteCount: Int, _ format: PCMFormat) throws(Error) -> Int {
        guard format.sampleRate > 0 else { throw .invalidSampleRate(format.sampleRate) }
        guard format.channels > 0 else { throw .invalidChannelCount(format.channels) }
        guard byteCount % format.bytesPerFrame == 0 else {
            throw .partialFrame(byteCount: byteCount, bytesPerFrame: format.bytesPerFrame)
        }
        return byteCount / format.bytesPerFrame
    }

    private static func decode(_ bytes: UnsafeRawBufferPointer, format: PCMFormat, frames: Int) -> [Float] {
        let big = format.endianness == .big
        switch format.encoding {
        case .int16:
            return gather(frames, format) { offset in
                let raw = bytes.loadUnaligned(fromByteOffset: offset * 2, as: UInt16.self)
                return Float(Int16(bitPattern: big ? UInt16(bigEndian: raw) : UInt16(littleEndian: raw))) / 32_768
            }
        case .int32:
            return gather(frames, format) { offset in
                let raw = bytes.loadUnaligned(fromByteOffset: offset * 4, as: UInt32.self)
                return Float(Int32(bitPattern: big ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw))) / 2_147_483_648
            }
        case .float32:
            return gather(frames, format) { offset in
                let raw = bytes.loadUnaligned(fromByteOffset: offset * 4, as: UInt32.self)
                let value = Float(bitPattern: big ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw))
                // One NaN or infinity would poison every later mix and the limiter's peak.
                return value.isFinite ? value : 0
            }
        }
    }

    /// Output sample `i` (interleaved) read from the input sample index it comes from.
    private static func gather(_ frames: Int, _ format: PCMFormat, _ sample: (Int) -> Float) -> [Float] {
        let channels = format.channels, count = frames * channels
        return [Float](unsafeUninitializedCapacity: count) { output, initialized in
            if format.interleaved || channels == 1 {
                for index in 0..<count { output[index] = sample(index) }
            } else {
                for channel in 0..<channels {
                    for frame in 0..<frames { output[frame * channels + channel] = sample(channel * frames + frame) }
                }
            }
            initialized = count
        }
    }
}
