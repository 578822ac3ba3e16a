/// Which video codec a recording is encoded with.
///
/// H.264 is the default: every player and browser plays it, and x264 is the cheapest encoder
/// at a given quality on a CPU. HEVC (x265) makes files about half the size at the same
/// quality for several times the CPU; AV1 (SVT-AV1) smaller still, also for more CPU.
public enum VideoCodec: String, Codable, Sendable, CaseIterable {
    /// H.264 through x264.
    case h264
    /// H.265 through x265.
    case hevc
    /// AV1 through SVT-AV1.
    case av1
}

/// How much picture quality to buy with bits, the same words for every codec: each maps to
/// that encoder's constant-quality setting (`crf`), chosen so that the three lossy steps look
/// alike across codecs.
public enum VideoQuality: String, Codable, Sendable, CaseIterable {
    /// Small files; text stays legible, fine detail and motion blur.
    case low
    /// The default: screen content looks as on screen to most eyes.
    case medium
    /// Hard to tell from the screen, at about twice the size of `medium`.
    case high
    /// Every pixel as captured (H.264 and HEVC only; SVT-AV1 has no lossless mode). Large.
    case lossless
}

/// How pictures are spaced in time in a recording.
///
/// `vfr` (the default) writes a picture when the screen changes, at most `fps` times a second,
/// and repeats a still one only every quarter second: small files, little CPU. `cfr` puts a
/// picture on every 1/fps step of the movie, repeating the last one while the screen is
/// still, which video editors that assume a fixed rate (and mishandle anything else) expect.
public enum FrameRateMode: String, Codable, Sendable, CaseIterable {
    /// Variable frame rate: a picture per change, up to `fps`.
    case vfr
    /// Constant frame rate: exactly `fps` pictures a second.
    case cfr
}
