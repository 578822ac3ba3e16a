public import Foundation

/// One picture decoded from a movie by ffmpeg, as RGB: for checking what a recording shows
/// at a given place, independently of our own decoder-free code.
public struct DecodedFrame: Sendable {
    public let width: Int
    public let height: Int
    private let rgb: [UInt8]

    public struct RGB: Sendable, Equatable, CustomStringConvertible {
        public let r, g, b: Int
        public var description: String { "rgb(\(r), \(g), \(b))" }
        public var isBlack: Bool { r < 24 && g < 24 && b < 24 }
    }

    /// The frame shown at `seconds` into `movie`.
    public init(_ movie: URL, at seconds: Double, width: Int, height: Int) throws {
        try self.init(input: ["-ss", String(seconds), "-i", movie.path], width: width, height: height)
    }

    /// A screenshot of an X display, as ffmpeg's x11grab reads it (independently of our capture);
    /// also written to `png` when given, for a person to look at.
    public init(screenOf display: String, width: Int, height: Int, png: URL? = nil) throws {
        try self.init(input: ["-f", "x11grab", "-video_size", "\(width)x\(height)", "-i", display], width: width, height: height)
        if let png {
            let raw = png.appendingPathExtension("rgb")
            defer { try? FileManager.default.removeItem(at: raw) }
            try Data(rgb).write(to: raw)
            _ = try Command.run(Command.which("ffmpeg"), ["-v", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-video_size", "\(width)x\(height)",
                                                         "-i", raw.path, "-frames:v", "1", "-y", png.path])
        }
    }

    private init(input: [String], width: Int, height: Int) throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("frame-\(UUID().uuidString).rgb")
        defer { try? FileManager.default.removeItem(at: output) }
        let result = try Command.run(Command.which("ffmpeg"), ["-v", "error"] + input + [
            "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-y", output.path,
        ])
        let data = (try? Data(contentsOf: output)) ?? Data()
        guard result.status == 0, data.count == width * height * 3 else {
            throw MediaProbe.Failure(description: "ffmpeg gave \(data.count) bytes for a \(width)x\(height) frame: \(result.stderr)")
        }
        self.width = width
        self.height = height
        rgb = [UInt8](data)
    }

    public func pixel(x: Int, y: Int) -> RGB {
        let offset = (y * width + x) * 3
        return RGB(r: Int(rgb[offset]), g: Int(rgb[offset + 1]), b: Int(rgb[offset + 2]))
    }

    /// Fraction of a grid of points inside the rectangle that are black.
    public func blackFraction(x: Int, y: Int, width: Int, height: Int, step: Int = 8) -> Double {
        fraction(x: x, y: y, width: width, height: height, step: step) { $0.isBlack }
    }

    /// Fraction of a grid of points inside the rectangle whose colour `matches`.
    public func fraction(x: Int, y: Int, width: Int, height: Int, step: Int = 8, _ matches: (RGB) -> Bool) -> Double {
        var matching = 0, total = 0
        for row in stride(from: y, to: y + height, by: step) {
            for column in stride(from: x, to: x + width, by: step) {
                total += 1
                if matches(pixel(x: column, y: row)) { matching += 1 }
            }
        }
        return total == 0 ? 0 : Double(matching) / Double(total)
    }
}
