import CFFmpeg

/// What a trim did: how much was copied and how much encoded again.
public struct TrimReport: Sendable, Equatable, CustomStringConvertible {
    /// Pictures decoded and encoded again: those before the span's first keyframe, or every
    /// picture of the span when `reencodedWhole`.
    public var framesReencoded = 0
    /// Video packets copied unchanged.
    public var videoPacketsCopied = 0
    public var audioPacketsCopied = 0
    /// The whole span was encoded again: `fallbackReason` says why.
    public var reencodedWhole = false
    public var fallbackReason: String?
    /// The span's length in seconds, the movie's end cutting it short.
    public var duration = 0.0

    public var description: String {
        let how = reencodedWhole ? "re-encoded whole (\(fallbackReason ?? "asked"))" : "\(framesReencoded) pictures re-encoded at the head"
        return "\(duration) s: \(how), \(videoPacketsCopied) video and \(audioPacketsCopied) audio packets copied"
    }
}

/// Cuts a span out of a movie, copying what it can: the video from the span's first keyframe
/// on is copied packet for packet; only the pictures before that keyframe are decoded (from
/// the keyframe before them) and encoded again, by an encoder opened as the movie's was
/// (`VideoEncoderSettings`), whose parameter sets must be the movie's so its pictures splice
/// in. When they cannot be (a movie without settings, an encoder whose sets differ, a stream
/// that reorders pictures), the span's video is encoded again whole: slower, as correct.
/// Audio packets in the span are copied. Every stream starts at the span's start.
public enum MovieTrimmer {
    /// Writes the span [`start`, `end`) seconds of `input` to `output`; an `end` past the
    /// movie's end means the end. `reencodeWhole` skips the splice (to compare the two).
    @discardableResult
    public static func trim(_ input: String, to output: String, from start: Double, to end: Double,
                            container: MovieRemuxer.Container, reencodeWhole: Bool = false) throws(CodecError) -> TrimReport {
        guard start.isFinite, end.isFinite, start >= 0 else {
            throw CodecError(.invalidSpan, "a trim's span must start at 0 s or later and end at a finite time (asked \(start)–\(end) s)")
        }
        guard start < end else { throw CodecError(.invalidSpan, "a trim's span must end after it starts (asked \(start)–\(end) s)") }
        av_log_set_level(AV_LOG_ERROR)
        let scan = try MovieScan(input)
        guard start < scan.end else {
            throw CodecError(.invalidSpan, "the span starts at \(start) s, at or after the movie's end (\(scan.end) s)")
        }
        let plan = try TrimPlan(scan, from: start, to: min(end, scan.end))
        let job = try TrimJob(input: input, output: output, container: container, scan: scan, plan: plan, reencodeWhole: reencodeWhole)
        return try job.run()
    }
}

/// The movie's video packets, read once without decoding: where its keyframes are and where it ends.
struct MovieScan {
    let videoIndex: Int
    let videoTimeBase: AVRational
    /// Presentation times of every video packet, in order.
    var times: [Int64] = []
    var keyframes: Set<Int64> = []
    /// The last packet's length, which ends the video.
    var lastDuration: Int64 = 0
    /// Some picture comes out in another order than it is decoded in (B-frames).
    var reorders = false
    /// Seconds: the latest end of a packet of any stream.
    var end = 0.0

    init(_ path: String) throws(CodecError) {
        let movie = try InputMovie(path)
        videoIndex = try movie.videoIndex()
        videoTimeBase = movie.stream(videoIndex).pointee.time_base
        guard let packet = av_packet_alloc() else { throw CodecError(.muxerFailed, "out of memory") }
        var owned: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&owned) }
        var previous = Int64.min
        while av_read_frame(movie.context, packet) >= 0 {
            defer { av_packet_unref(packet) }
            let index = Int(packet.pointee.stream_index)
            let pts = packet.pointee.pts
            guard pts != CFFmpeg_AV_NOPTS_VALUE() else {
                if index == videoIndex { reorders = true }
                continue
            }
            let timeBase = movie.stream(index).pointee.time_base
            end = max(end, Double(pts + max(packet.pointee.duration, 0)) * av_q2d(timeBase))
            guard index == videoIndex else { continue }
            if pts <= previous || (packet.pointee.dts != CFFmpeg_AV_NOPTS_VALUE() && packet.pointee.dts != pts) { reorders = true }
            previous = pts
            times.append(pts)
            lastDuration = packet.pointee.duration
            if packet.pointee.flags & AV_PKT_FLAG_KEY != 0 { keyframes.insert(pts) }
        }
        times.sort()
    }
}

/// Which video pictures go where, by their index in presentation order.
struct TrimPlan {
    /// The span in the video's time base.
    let start: Int64
    let end: Int64
    /// The picture on screen at `start`: the output's first, shown from 0.
    let first: Int
    /// The first keyframe at or after `first` (`last` when none): copied from here on.
    let splice: Int
    /// Past the output's last picture.
    let last: Int
    /// The keyframe decoding starts at, for the pictures before `splice`.
    let decodeFrom: Int
    let duration: Double

    init(_ scan: MovieScan, from: Double, to: Double) throws(CodecError) {
        let rate = av_q2d(scan.videoTimeBase)
        // Rounded up, so a time on a tick stays on it despite the division's error.
        start = Int64((from / rate - 1e-6).rounded(.up))
        end = Int64((to / rate - 1e-6).rounded(.up))
        let times = scan.times
        let start = start, end = end
        let first = (times.lastIndex { $0 <= start }) ?? 0
        let last = (times.firstIndex { $0 >= end }) ?? times.count
        guard first < last else { throw CodecError(.invalidSpan, "the movie has no picture between \(from) s and \(to) s") }
        self.first = first
        self.last = last
        splice = (first..<last).first { scan.keyframes.contains(times[$0]) } ?? last
        decodeFrom = (0...first).last { scan.keyframes.contains(times[$0]) } ?? 0
        duration = to - from
    }

    /// Where picture `index` goes, and for how long, in the video's time base: shifted by the
    /// span's start, the first stretched back to 0 and the last cut at the span's end.
    func placement(_ index: Int, times: [Int64], lastDuration: Int64) -> (pts: Int64, duration: Int64) {
        let shown = max(times[index], start)
        let next = index + 1 < times.count ? times[index + 1] : times[index] + max(lastDuration, 1)
        return (shown - start, max(min(next, end) - shown, 1))
    }
}

/// A movie open for reading.
final class InputMovie {
    let context: UnsafeMutablePointer<AVFormatContext>

    init(_ path: String) throws(CodecError) {
        var source: UnsafeMutablePointer<AVFormatContext>?
        var status = avformat_open_input(&source, path, nil, nil)
        guard status >= 0, let source else { throw CodecError(.muxerFailed, "cannot read the recording", status: status) }
        context = source
        status = avformat_find_stream_info(source, nil)
        guard status >= 0 else { throw CodecError(.muxerFailed, "cannot read the recording's streams", status: status) }
    }

    deinit {
        var context: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&context)
    }

    var streamCount: Int { Int(context.pointee.nb_streams) }
    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> { context.pointee.streams[index]! }

    func videoIndex() throws(CodecError) -> Int {
        let index = av_find_best_stream(context, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard index >= 0 else { throw CodecError(.muxerFailed, "the recording has no video track") }
        return Int(index)
    }

    /// The movie's tag `key`.
    func tag(_ key: String) -> String? {
        guard let entry = av_dict_get(context.pointee.metadata, key, nil, 0), let value = entry.pointee.value else { return nil }
        return String(cString: value)
    }
}
