import ReplaySystem

/// What the person entered for the gst extension, checked before GStreamer is touched. Every
/// problem is a sentence the person can act on.
struct GstSettings: Sendable, Equatable {
    struct Problem: Error, CustomStringConvertible, Equatable {
        let description: String
    }

    /// The pipeline's tail, as typed: where the pictures go (and `audio.` where the sound goes).
    var tail: String
    /// The folder a filesink or hlssink2 may write in: a `directory` setting, so the sandbox
    /// lets the extension write there and nowhere else.
    var directory: String?
    /// A secret written into the pipeline where the tail says `{key}`: a stream key never shown.
    var key: String?
    /// The pictures' longer side at most, in pixels.
    var maxSize: Int
    /// Pictures a second at most.
    var fps: Int

    static let keyPlaceholder = "{key}"
    static let defaultMaxSize = 1280
    static let defaultFPS = 30
    /// Longer than any pipeline a person types; a bound on what GStreamer's parser is handed.
    static let maxTailLength = 4096

    init(setup: [String: String]) throws(Problem) {
        func value(_ key: String) -> String? {
            let text = setup[key]?.trimmingSpaces() ?? ""
            return text.isEmpty ? nil : text
        }
        func number(_ key: String, default fallback: Int, in range: ClosedRange<Int>, unit: String) throws(Problem) -> Int {
            guard let text = value(key) else { return fallback }
            guard let number = Double(text), number.rounded() == number, range.contains(Int(number)) else {
                throw Problem(description: "\(key) must be a whole number of \(unit) from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
            }
            return Int(number)
        }

        guard let tail = value("pipeline") else {
            throw Problem(description: "pipeline is empty: give the pipeline's tail, such as "
                + "x264enc tune=zerolatency ! flvmux ! rtmp2sink location=rtmp://host/app/{key}")
        }
        guard tail.count <= Self.maxTailLength else {
            throw Problem(description: "pipeline is \(tail.count) characters long; at most \(Self.maxTailLength) are taken")
        }
        self.tail = tail
        maxSize = try number("max-size", default: Self.defaultMaxSize, in: 160...3840, unit: "pixels")
        fps = try number("fps", default: Self.defaultFPS, in: 1...30, unit: "frames per second")
        key = value("key")
        if let key, key.contains(where: { $0 == " " || $0 == "!" || $0 == "\"" || $0 == "'" }) {
            throw Problem(description: "the key cannot contain spaces, '!' or quotes")
        }
        if tail.contains(Self.keyPlaceholder) && key == nil {
            throw Problem(description: "pipeline says \(Self.keyPlaceholder) but the secret setting 'key' is empty")
        }
        if let directory = value("dir") {
            guard directory.hasPrefix("/") else { throw Problem(description: "dir must be an absolute path to a folder") }
            self.directory = GstPaths.normalized(directory)
        }
    }
}
