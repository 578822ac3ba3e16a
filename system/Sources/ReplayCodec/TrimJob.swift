import CFFmpeg
import ReplayMedia

/// A trim's second pass (`MovieTrimmer`): reads the movie again and writes the span, copying
/// packets, and decoding and encoding the pictures the plan says.
final class TrimJob {
    private let source: InputMovie
    private let target: UnsafeMutablePointer<AVFormatContext>
    private let output: String
    private let scan: MovieScan
    private let plan: TrimPlan
    private let from: Double
    private let to: Double
    private var report = TrimReport()
    /// Encodes the pictures before the splice, or every picture when the span is re-encoded whole.
    private let encoder: VideoEncoder?
    private var decoder: VideoDecoder?
    /// The movie's packets are in ISO layout (avcC, hvcC): each unit's length takes this many
    /// bytes, and the encoder's spliced packets are re-laid so.
    private let isoLengthSize: Int?
    private let codecID: AVCodecID
    /// Where each encoded picture goes (by the pts it was encoded at), in the video's time base.
    private var placements: [Int64: (pts: Int64, duration: Int64)] = [:]
    private var lastEncodedPTS = Int64.min
    private var encodingFinished = false
    private var opened = false

    init(input: String, output: String, container: MovieRemuxer.Container, scan: MovieScan, plan: TrimPlan,
         reencodeWhole: Bool) throws(CodecError) {
        source = try InputMovie(input)
        self.output = output
        self.scan = scan
        self.plan = plan
        from = Double(plan.start) * av_q2d(scan.videoTimeBase)
        to = from + plan.duration
        let stream = source.stream(scan.videoIndex)
        let parameters = stream.pointee.codecpar!
        codecID = parameters.pointee.codec_id
        let settings = source.tag(VideoEncoderSettings.tagKey).flatMap(VideoEncoderSettings.init(tag:))
        let extradata = Array(UnsafeBufferPointer(start: parameters.pointee.extradata, count: Int(parameters.pointee.extradata_size)))

        var fallback: String? = reencodeWhole ? "asked to" : nil
        if fallback == nil, scan.reorders { fallback = "the video reorders its pictures" }
        var head: VideoEncoder?
        if fallback == nil, plan.splice > plan.first {
            if let settings {
                do {
                    let encoder = try Self.encoder(settings, for: stream)
                    let ours = Array(UnsafeBufferPointer(start: encoder.context.pointee.extradata,
                                                         count: Int(encoder.context.pointee.extradata_size)))
                    // Pictures encoded with other parameter sets than the movie's would not decode in it.
                    if let sets = NALUnits.parameterSets(extradata, codec: codecID), !sets.isEmpty,
                       sets == NALUnits.parameterSets(ours, codec: codecID) {
                        head = encoder
                    } else {
                        fallback = "an encoder opened as the movie's has other parameter sets"
                    }
                } catch {
                    fallback = "cannot open an encoder as the movie's: \(error)"
                }
            } else {
                fallback = "the movie does not say how its video was encoded"
            }
        }
        if let fallback {
            report.reencodedWhole = true
            report.fallbackReason = fallback
            head = try Self.encoder(settings ?? Self.defaultSettings(stream), for: stream)
        }
        encoder = head
        isoLengthSize = report.reencodedWhole || !NALUnits.isISO(extradata) ? nil : NALUnits.lengthSize(extradata, codec: codecID)

        var context: UnsafeMutablePointer<AVFormatContext>?
        var status = avformat_alloc_output_context2(&context, nil, container.muxerName, output)
        guard status >= 0, let context else { throw CodecError(.muxerFailed, "cannot create the \(container.muxerName) muxer", status: status) }
        target = context
        av_dict_copy(&target.pointee.metadata, source.context.pointee.metadata, 0)
        if report.reencodedWhole, let encoder { av_dict_set(&target.pointee.metadata, VideoEncoderSettings.tagKey, encoder.settings.tag, 0) }
        for index in 0..<source.streamCount {
            let stream = source.stream(index)
            guard let copy = avformat_new_stream(target, nil) else { throw CodecError(.muxerFailed, "cannot add a stream to \(output)") }
            if index == scan.videoIndex, report.reencodedWhole, let encoder {
                status = avcodec_parameters_from_context(copy.pointee.codecpar, encoder.context)
            } else {
                status = avcodec_parameters_copy(copy.pointee.codecpar, stream.pointee.codecpar)
                copy.pointee.codecpar.pointee.codec_tag = 0
            }
            guard status >= 0 else { throw CodecError(.muxerFailed, "cannot copy a stream's parameters", status: status) }
            // A cut in the middle of an AAC stream has no encoder priming to skip.
            copy.pointee.codecpar.pointee.initial_padding = 0
            copy.pointee.time_base = stream.pointee.time_base
            av_dict_copy(&copy.pointee.metadata, stream.pointee.metadata, 0)
        }
        status = avio_open(&target.pointee.pb, output, AVIO_FLAG_WRITE)
        guard status >= 0 else { throw CodecError(.writeFailed, "cannot create \(output)", status: status) }
        opened = true
        var options: OpaquePointer?
        // Keeps the movie's tags (the encoder's settings among them) in a regular MP4.
        if container == .mp4 { av_dict_set(&options, "movflags", "use_metadata_tags", 0) }
        status = avformat_write_header(target, &options)
        av_dict_free(&options)
        guard status >= 0 else { throw CodecError(.muxerFailed, "cannot write the \(container.muxerName) header", status: status) }
    }

    deinit {
        if opened { avio_closep(&target.pointee.pb) }
        avformat_free_context(target)
    }

    func run() throws(CodecError) -> TrimReport {
        guard let packet = av_packet_alloc() else { throw CodecError(.muxerFailed, "out of memory") }
        var owned: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&owned) }
        var ordinal = 0
        var keyframesPastEnd = 0
        var past = Set<Int>()
        while past.count < source.streamCount, av_read_frame(source.context, packet) >= 0 {
            defer { av_packet_unref(packet) }
            let index = Int(packet.pointee.stream_index)
            guard index < source.streamCount, packet.pointee.pts != CFFmpeg_AV_NOPTS_VALUE() else { continue }
            guard index == scan.videoIndex else {
                if try copyOther(packet, stream: index) { past.insert(index) }
                continue
            }
            if report.reencodedWhole {
                guard !encodingFinished else { continue }
                // Past the end, a stream that reorders may still need the packets up to the next keyframe.
                if packet.pointee.pts >= plan.end, !scan.reorders || (isKeyframe(packet) && keyframesPastEnd == 1) {
                    try finishEncoding()
                    past.insert(index)
                    continue
                }
                if packet.pointee.pts >= plan.end, isKeyframe(packet) { keyframesPastEnd += 1 }
                if decoder == nil {
                    guard isKeyframe(packet), packet.pointee.pts >= scan.times[plan.decodeFrom] else { continue }
                    decoder = try VideoDecoder(source.stream(index))
                }
                try decode(packet)
                continue
            }
            // Spliced: the stream does not reorder, so the n-th packet is the n-th picture.
            let picture = ordinal
            ordinal += 1
            if picture < plan.decodeFrom { continue }
            if picture < plan.splice {
                if decoder == nil { decoder = try VideoDecoder(source.stream(index)) }
                try decode(packet)
                if picture == plan.splice - 1 { try finishEncoding() }
                continue
            }
            guard picture < plan.last else {
                past.insert(index)
                continue
            }
            let place = plan.placement(picture, times: scan.times, lastDuration: scan.lastDuration)
            packet.pointee.pts = place.pts
            packet.pointee.dts = place.pts
            packet.pointee.duration = place.duration
            try write(packet, stream: index, from: scan.videoTimeBase)
            report.videoPacketsCopied += 1
        }
        try finishEncoding()
        let status = av_write_trailer(target)
        guard status >= 0 else { throw CodecError(.writeFailed, "cannot finish \(output)", status: status) }
        report.duration = plan.duration
        return report
    }

    private func isKeyframe(_ packet: UnsafeMutablePointer<AVPacket>) -> Bool { packet.pointee.flags & AV_PKT_FLAG_KEY != 0 }

    /// Copies a packet of a stream other than the video when it starts within the span; true once the stream is past it.
    private func copyOther(_ packet: UnsafeMutablePointer<AVPacket>, stream index: Int) throws(CodecError) -> Bool {
        let timeBase = source.stream(index).pointee.time_base
        let start = Self.ticks(from, timeBase), end = Self.ticks(to, timeBase)
        let pts = packet.pointee.pts
        guard pts < end else { return true }
        guard pts >= start else { return false }
        packet.pointee.pts -= start
        if packet.pointee.dts != CFFmpeg_AV_NOPTS_VALUE() { packet.pointee.dts = max(packet.pointee.dts - start, 0) }
        try write(packet, stream: index, from: timeBase)
        if source.stream(index).pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO { report.audioPacketsCopied += 1 }
        return false
    }

    private func decode(_ packet: UnsafeMutablePointer<AVPacket>?) throws(CodecError) {
        try decoder?.decode(packet) { picture, pts throws(CodecError) in try encode(picture, pts: pts) }
    }

    /// Encodes a decoded picture if it is one of those the plan re-encodes.
    private func encode(_ picture: UnsafeMutablePointer<AVFrame>, pts: Int64) throws(CodecError) {
        let times = scan.times
        var low = 0, high = times.count
        while low < high {
            let middle = (low + high) / 2
            if times[middle] < pts { low = middle + 1 } else { high = middle }
        }
        let upTo = report.reencodedWhole ? plan.last : plan.splice
        guard let encoder, low < times.count, times[low] == pts, low >= plan.first, low < upTo else { return }
        let place = plan.placement(low, times: times, lastDuration: scan.lastDuration)
        let encoded = max(av_rescale_q(place.pts, scan.videoTimeBase, encoder.context.pointee.time_base), lastEncodedPTS + 1)
        lastEncodedPTS = encoded
        placements[encoded] = place
        report.framesReencoded += 1
        try encoder.encode(decoded: picture, pts: encoded) { packet throws(CodecError) in try writeEncoded(packet) }
    }

    /// Drains the decoder and the encoder once the last picture to encode has been read.
    private func finishEncoding() throws(CodecError) {
        guard !encodingFinished else { return }
        encodingFinished = true
        guard decoder != nil else { return }
        try decode(nil)
        try encoder?.finish { packet throws(CodecError) in try writeEncoded(packet) }
        decoder = nil
    }

    private func writeEncoded(_ packet: UnsafeMutablePointer<AVPacket>) throws(CodecError) {
        guard let place = placements.removeValue(forKey: packet.pointee.pts) else {
            throw CodecError(.encoderFailed, "the encoder gave a picture it was not given")
        }
        packet.pointee.pts = place.pts
        packet.pointee.dts = place.pts
        packet.pointee.duration = place.duration
        guard let isoLengthSize else { return try write(packet, stream: scan.videoIndex, from: scan.videoTimeBase) }
        let laid = NALUnits.lengthPrefixed(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))[...].map { $0 }[...],
                                           codec: codecID, lengthSize: isoLengthSize)
        guard let copy = av_packet_alloc() else { throw CodecError(.muxerFailed, "out of memory") }
        var owned: UnsafeMutablePointer<AVPacket>? = copy
        defer { av_packet_free(&owned) }
        guard av_new_packet(copy, Int32(laid.count)) >= 0, av_packet_copy_props(copy, packet) >= 0 else {
            throw CodecError(.muxerFailed, "out of memory")
        }
        laid.withUnsafeBufferPointer { copy.pointee.data.update(from: $0.baseAddress!, count: laid.count) }
        try write(copy, stream: scan.videoIndex, from: scan.videoTimeBase)
    }

    private func write(_ packet: UnsafeMutablePointer<AVPacket>, stream index: Int, from timeBase: AVRational) throws(CodecError) {
        guard let stream = target.pointee.streams[index] else { throw CodecError(.muxerFailed, "\(output) has no track \(index)") }
        packet.pointee.stream_index = Int32(index)
        av_packet_rescale_ts(packet, timeBase, stream.pointee.time_base)
        packet.pointee.pos = -1
        let status = av_interleaved_write_frame(target, packet)
        guard status >= 0 else { throw CodecError(.writeFailed, "cannot write \(output)", status: status) }
    }

    /// `seconds` in `timeBase`, rounded up so that a time on a tick stays on it.
    static func ticks(_ seconds: Double, _ timeBase: AVRational) -> Int64 {
        Int64((seconds / av_q2d(timeBase) - 1e-6).rounded(.up))
    }

    private static func encoder(_ settings: VideoEncoderSettings, for stream: UnsafeMutablePointer<AVStream>) throws(CodecError) -> VideoEncoder {
        let parameters = stream.pointee.codecpar.pointee
        guard parameters.format == AV_PIX_FMT_YUV420P.rawValue else {
            throw CodecError(.encoderUnavailable, "the movie's pictures are not in 4:2:0, which the encoder takes")
        }
        let picture = PictureFormat(matrix: parameters.color_space == AVCOL_SPC_BT709 ? .bt709 : .bt601,
                                    range: parameters.color_range == AVCOL_RANGE_JPEG ? .full : .video)
        return try VideoEncoder(settings, width: Int(parameters.width), height: Int(parameters.height), pictureFormat: picture)
    }

    /// For a movie that does not say how it was encoded: its codec, at the recorder's defaults.
    private static func defaultSettings(_ stream: UnsafeMutablePointer<AVStream>) -> VideoEncoderSettings {
        let codec: VideoCodec = switch stream.pointee.codecpar.pointee.codec_id {
        case AV_CODEC_ID_HEVC: .hevc
        case AV_CODEC_ID_AV1: .av1
        default: .h264
        }
        let rate = stream.pointee.avg_frame_rate
        let fps = rate.num > 0 && rate.den > 0 ? Int(av_q2d(rate).rounded()) : 30
        return VideoEncoderSettings(codec: codec, fps: min(max(fps, 1), 240))
    }
}
