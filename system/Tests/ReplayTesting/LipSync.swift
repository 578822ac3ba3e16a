public import Foundation

/// Measures lip sync in a recording of the demo scene: finds each flash (the first frame
/// whose mean brightness jumps) and each beep (the first millisecond whose energy jumps),
/// pairs them, and reports audio-minus-video offsets.
public struct LipSync: Sendable {
    public let flashes: [Double]
    public let beeps: [Double]
    /// Audio minus video, in milliseconds, one per flash that has a beep within 0.4 s.
    public let offsets: [Double]

    public var maxAbsoluteOffset: Double { offsets.map(abs).max() ?? .infinity }
    /// The middle offset by size: where most flashes' beeps are, whatever one outlier did.
    public var medianAbsoluteOffset: Double {
        let sorted = offsets.map(abs).sorted()
        return sorted.isEmpty ? .infinity : sorted[sorted.count / 2]
    }

    /// A beep is found to the millisecond (48-sample windows), so a true offset of exactly one
    /// frame can measure up to 1 ms more.
    public static let beepResolution = 1.0

    /// The largest offset, in milliseconds, that is within `frames` frames at `fps`, as this
    /// measurement can see it.
    public static func limit(frames: Double, fps: Double = 30) -> Double { frames * 1000 / fps + beepResolution }
    /// The flash time of each offset, in seconds.
    public let offsetTimes: [Double]

    /// How far the offset moved over the recording, in milliseconds: the median of the slopes
    /// between every two offsets (the Theil-Sen trend), across the span from the first to the
    /// last. A steady drift moves every slope; a picture caught a frame late, which a loaded
    /// machine does now and then, moves only the few slopes it is part of. (The last offset less
    /// the first, or a least-squares line, moved by up to 33 ms for one such picture.)
    public var drift: Double {
        guard let first = offsetTimes.first, let last = offsetTimes.last, last > first else { return 0 }
        var slopes: [Double] = []
        for i in offsets.indices {
            for j in offsets.indices where j > i && offsetTimes[j] > offsetTimes[i] {
                slopes.append((offsets[j] - offsets[i]) / (offsetTimes[j] - offsetTimes[i]))
            }
        }
        slopes.sort()
        let middle = slopes.count / 2
        let median = slopes.count % 2 == 1 ? slopes[middle] : (slopes[middle - 1] + slopes[middle]) / 2
        return median * (last - first)
    }

    /// Flashes of the video against beeps of audio track `audioTrack` (0: the first, app audio;
    /// 1: the microphone's in a recording with both).
    public init(_ file: URL, audioTrack: Int = 0) throws {
        flashes = try Self.flashTimes(file)
        beeps = try Self.beepTimes(file, track: audioTrack)
        var offsets: [Double] = [], offsetTimes: [Double] = []
        for flash in flashes {
            if let beep = beeps.min(by: { abs($0 - flash) < abs($1 - flash) }), abs(beep - flash) < 0.4 {
                offsets.append((beep - flash) * 1000)
                offsetTimes.append(flash)
            }
        }
        self.offsets = offsets
        self.offsetTimes = offsetTimes
    }

    private static func flashTimes(_ file: URL) throws -> [Double] {
        // Presentation times from the packets (no B-frames, so packet order is display order).
        let times = try Command.run(Command.which("ffprobe"), [
            "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", file.path,
        ]).stdout.split(whereSeparator: \.isNewline).compactMap { Double($0.split(separator: ",")[0]) }.sorted()
        let raw = try decode(file, ["-map", "0:v:0", "-vf", "scale=32:18", "-fps_mode", "passthrough",
                                    "-pix_fmt", "gray", "-f", "rawvideo"])
        let pixels = 32 * 18
        let brightness = stride(from: 0, to: raw.count - pixels + 1, by: pixels).map { start in
            Double(raw[start..<start + pixels].reduce(0) { $0 + Int($1) }) / Double(pixels)
        }
        var onsets: [Double] = []
        for index in 1..<min(brightness.count, times.count)
        where brightness[index] - brightness[index - 1] > 60 && brightness[index] > 150 {
            onsets.append(times[index])
        }
        return onsets
    }

    private static func beepTimes(_ file: URL, track: Int) throws -> [Double] {
        let start = try Command.run(Command.which("ffprobe"), [
            "-v", "error", "-select_streams", "a:\(track)", "-show_entries", "stream=start_time", "-of", "csv=p=0", file.path,
        ]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let origin = Double(start) ?? 0
        let raw = try decode(file, ["-map", "0:a:\(track)", "-ac", "1", "-ar", "48000", "-f", "f32le"])
        let samples = raw.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let window = 48
        let energy = stride(from: 0, to: samples.count - window + 1, by: window).map { start in
            (samples[start..<start + window].reduce(0) { $0 + Double($1 * $1) } / Double(window)).squareRoot()
        }
        guard let peak = energy.max(), peak > 0 else { return [] }
        let threshold = max(peak * 0.25, 1e-3)
        var onsets: [Double] = []
        for index in 1..<energy.count where energy[index] >= threshold && energy[index - 1] < threshold {
            let time = origin + Double(index) / 1000
            if time - (onsets.last ?? -1) > 0.3 { onsets.append(time) }
        }
        return onsets
    }

    private static func decode(_ file: URL, _ arguments: [String]) throws -> Data {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("decode-\(UUID().uuidString).raw")
        defer { try? FileManager.default.removeItem(at: output) }
        let result = try Command.run(Command.which("ffmpeg"), ["-v", "error", "-i", file.path] + arguments + ["-y", output.path])
        guard result.status == 0 else { throw MediaProbe.Failure(description: "ffmpeg cannot decode \(file.path): \(result.stderr)") }
        return try Data(contentsOf: output)
    }
}
