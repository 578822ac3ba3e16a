public import Foundation

/// What ffprobe says of a movie: an independent check of what we wrote.
public struct MediaProbe: Sendable {
    public struct Stream: Sendable {
        public let type: String
        public let codec: String
        public let width: Int?
        public let height: Int?
        public let duration: Double?
        public let packets: Int?
        public let title: String?
        /// The video stream's colour tags as ffprobe names them (`color_space`: "smpte170m",
        /// "bt709"; `color_range`: "tv", "pc"; `color_primaries`; `color_transfer`).
        public let colorSpace: String?
        public let colorRange: String?
        public let colorPrimaries: String?
        public let colorTransfer: String?
        /// `r_frame_rate` and `avg_frame_rate`, as ffprobe writes them ("30/1").
        public let frameRate: String?
        public let averageFrameRate: String?
    }

    public let streams: [Stream]
    public let duration: Double?
    /// The container as ffprobe names it ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm").
    public let formatName: String?

    public var video: Stream? { streams.first { $0.type == "video" } }
    public var audio: [Stream] { streams.filter { $0.type == "audio" } }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Probes `file`, counting packets (so frames are counted without decoding).
    public init(_ file: URL) throws {
        let result = try Command.run(Command.which("ffprobe"), [
            "-v", "error", "-count_packets", "-print_format", "json", "-show_streams", "-show_format", file.path,
        ])
        guard result.status == 0, let data = result.stdout.data(using: .utf8),
              let root = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw Failure(description: "ffprobe cannot read \(file.path): \(result.stderr)")
        }
        func number(_ value: Any?) -> Double? { (value as? String).flatMap(Double.init) ?? (value as? Double) }
        streams = ((root["streams"] as? [[String: Any]]) ?? []).map { stream in
            Stream(type: stream["codec_type"] as? String ?? "", codec: stream["codec_name"] as? String ?? "",
                   width: stream["width"] as? Int, height: stream["height"] as? Int,
                   duration: number(stream["duration"]), packets: (stream["nb_read_packets"] as? String).flatMap(Int.init),
                   title: (stream["tags"] as? [String: Any])?["handler_name"] as? String,
                   colorSpace: stream["color_space"] as? String, colorRange: stream["color_range"] as? String,
                   colorPrimaries: stream["color_primaries"] as? String, colorTransfer: stream["color_transfer"] as? String,
                   frameRate: stream["r_frame_rate"] as? String, averageFrameRate: stream["avg_frame_rate"] as? String)
        }
        duration = number((root["format"] as? [String: Any])?["duration"])
        formatName = (root["format"] as? [String: Any])?["format_name"] as? String
    }
}
