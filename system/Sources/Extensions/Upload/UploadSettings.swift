import FoundationEssentials
public import ReplayCodec
public import ReplayProcessing
import ReplaySystem

/// The ingest services the reference extensions speak.
public enum UploadService: String, Sendable, CaseIterable {
    /// FLV over RTMP: YouTube, Twitch, nginx-rtmp and most services.
    case rtmp
    /// MPEG-TS over SRT, as a caller.
    case srt
    /// HLS segments and a playlist in a local directory.
    case hls
}

/// What the person entered in the picker, checked and turned into an ingest target and
/// encoder settings. Every problem is a sentence the person can act on.
public struct UploadSettings: Sendable, Equatable {
    public var target: IngestTarget
    public var video: VideoSource.Settings
    public var videoBitRate: Int
    public var fps: Int
    /// How long a lost server is retried before the broadcast ends with an error.
    public var reconnectTimeout: Double
    /// Whether a lost connection is retried at all (a local HLS directory is not a server).
    public var reconnects: Bool
    public var watchURL: String?

    public struct Problem: Error, CustomStringConvertible, Equatable {
        public let description: String
    }

    public static let defaultBitRateKbps = 2500
    public static let defaultFPS = 30
    public static let defaultReconnectTimeout = 60.0

    public init(service: UploadService, setup: [String: String]) throws(Problem) {
        func value(_ key: String) -> String? {
            let text = setup[key]?.trimmingSpaces() ?? ""
            return text.isEmpty ? nil : text
        }
        func number(_ key: String, default fallback: Double, in range: ClosedRange<Double>, unit: String) throws(Problem) -> Double {
            guard let text = value(key) else { return fallback }
            guard let number = Double(text), range.contains(number) else {
                throw Problem(description: "\(key) must be a number of \(unit) from \(Int(range.lowerBound)) to \(Int(range.upperBound)), not '\(text)'")
            }
            return number
        }

        let mode: VideoSource.Mode
        switch value("mode") ?? "video" {
        case "video": mode = .video
        case "screencast": mode = .screencast
        case let other: throw Problem(description: "mode must be 'video' or 'screencast', not '\(other)'")
        }
        videoBitRate = Int(try number("bitrate", default: Double(Self.defaultBitRateKbps), in: 100...50_000, unit: "kbit/s")) * 1000
        fps = Int(try number("fps", default: Double(Self.defaultFPS), in: 1...30, unit: "frames per second"))
        reconnectTimeout = try number("reconnect-timeout", default: Self.defaultReconnectTimeout, in: 1...3600, unit: "seconds")
        video = VideoSource.Settings(mode: mode, frameRateCap: fps)
        watchURL = value("watch-url")
        reconnects = service != .hls
        target = try Self.target(for: service, value: value)
    }

    private static func target(for service: UploadService, value: (String) -> String?) throws(Problem) -> IngestTarget {
        switch service {
        case .rtmp:
            guard let url = value("url"), url.hasPrefix("rtmp://") || url.hasPrefix("rtmps://") else {
                throw Problem(description: "url must be an RTMP server address such as rtmp://live.example.com/app")
            }
            guard let key = value("key") else { throw Problem(description: "key (the stream key) is missing") }
            guard !key.contains("/"), !key.contains(" ") else { throw Problem(description: "the stream key cannot contain '/' or spaces") }
            try refuseSecrets(in: url, settings: "key")
            let base = url.hasSuffix("/") ? String(url.dropLast()) : url
            // rtmp://host/app is the server; a second path part is where a stream key goes.
            let path = base.split(separator: "/", omittingEmptySubsequences: true).dropFirst(2)
            guard path.count <= 1 else {
                throw Problem(description: "url has a part after the server's application (rtmp://host/app/…), where a stream key goes, and a URL shows wherever it is written: give the server URL alone as url and the "
                    + "key in the secret setting 'key'; if this URL was ever on a command line, change the key")
            }
            // FFmpeg's RTMP takes the key as the last path element; it never reaches a message.
            return IngestTarget(muxer: "flv", url: "\(base)/\(key)", displayURL: base,
                                options: ["flvflags": "no_duration_filesize"])
        case .srt:
            guard let url = value("url"), url.hasPrefix("srt://") else {
                throw Problem(description: "url must be an SRT listener address such as srt://ingest.example.com:9000")
            }
            try refuseSecrets(in: url, settings: "passphrase' and 'streamid")
            var parameters: [String] = url.contains("mode=") ? [] : ["mode=caller"]
            if let passphrase = value("passphrase") {
                // libsrt's own limits: an AES key is derived from 10 to 79 characters.
                guard (10...79).contains(passphrase.count) else { throw Problem(description: "passphrase must be 10 to 79 characters long") }
                parameters.append("passphrase=\(Self.queryEscaped(passphrase))")
            }
            if let streamID = value("streamid") { parameters.append("streamid=\(Self.queryEscaped(streamID))") }
            let caller = parameters.isEmpty ? url : url + (url.contains("?") ? "&" : "?") + parameters.joined(separator: "&")
            // Only where it goes is shown: never the passphrase or the stream id.
            let display = String(url.prefix { $0 != "?" })
            return IngestTarget(muxer: "mpegts", url: caller, displayURL: display)
        case .hls:
            guard let directory = value("dir"), directory.hasPrefix("/") else {
                throw Problem(description: "dir must be an absolute path to a directory")
            }
            var isDirectory = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory else {
                throw Problem(description: "\(directory) is not a directory")
            }
            let base = URL(fileURLWithPath: directory)
            return IngestTarget(
                muxer: "hls", url: base.appendingPathComponent("stream.m3u8").path,
                options: ["hls_time": "2", "hls_list_size": "0", "hls_flags": "independent_segments+temp_file",
                          "hls_segment_filename": base.appendingPathComponent("segment-%05d.ts").path])
        }
    }

    /// A secret in the URL (a passphrase, a key, a password) is refused: a URL shows wherever
    /// it is written (a command line, a log); the secret belongs in its own secret setting.
    private static func refuseSecrets(in url: String, settings: String) throws(Problem) {
        let secrets = URLSecrets.carried(by: url)
        guard !secrets.isEmpty else { return }
        throw Problem(description: "url carries \(secrets.joined(separator: " and ")), and a URL shows wherever it is written: give the "
            + "URL without it and the secret in the secret setting '\(settings)'; if this URL was ever on a command line, change the secret")
    }

    /// A value as one query parameter: everything but unreserved characters percent-encoded.
    static func queryEscaped(_ value: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~".utf8)
        return value.utf8.map { allowed.contains($0) ? String(UnicodeScalar($0)) : String(printf: "%%%02X", $0) }.joined()
    }
}
