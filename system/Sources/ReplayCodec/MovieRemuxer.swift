import CFFmpeg

/// Copies a movie's streams, packet for packet, into another container: no re-encoding, so
/// it takes about as long as reading the file. The store keeps fragmented MP4 (what survives
/// a crash and what the preview page plays); other containers are made on export.
public enum MovieRemuxer {
    /// A container a recording can be exported in.
    public enum Container: Sendable {
        /// A regular (not fragmented) MP4, for a file written whole; the store keeps fragmented ones.
        case mp4
        case matroska

        var muxerName: String {
            switch self {
            case .mp4: "mp4"
            case .matroska: "matroska"
            }
        }
    }

    /// Writes `input`'s streams into a new file at `output` in `container`.
    public static func remux(_ input: String, to output: String, container: Container) throws(CodecError) {
        var source: UnsafeMutablePointer<AVFormatContext>?
        var status = avformat_open_input(&source, input, nil, nil)
        guard status >= 0, source != nil else { throw CodecError(.muxerFailed, "cannot read the recording", status: status) }
        defer { avformat_close_input(&source) }
        status = avformat_find_stream_info(source, nil)
        guard status >= 0, let source else { throw CodecError(.muxerFailed, "cannot read the recording's streams", status: status) }

        var target: UnsafeMutablePointer<AVFormatContext>?
        status = avformat_alloc_output_context2(&target, nil, container.muxerName, output)
        guard status >= 0, let target else { throw CodecError(.muxerFailed, "cannot create the \(container.muxerName) muxer", status: status) }
        defer { avformat_free_context(target) }
        for index in 0..<Int(source.pointee.nb_streams) {
            guard let stream = source.pointee.streams[index], let copy = avformat_new_stream(target, nil) else {
                throw CodecError(.muxerFailed, "cannot add a stream to the \(container.muxerName) file")
            }
            status = avcodec_parameters_copy(copy.pointee.codecpar, stream.pointee.codecpar)
            guard status >= 0 else { throw CodecError(.muxerFailed, "cannot copy a stream's parameters", status: status) }
            // The MP4 sample entry's tag ("avc1") means nothing to another container.
            copy.pointee.codecpar.pointee.codec_tag = 0
            // Track titles ("app audio", "microphone") go along.
            av_dict_copy(&copy.pointee.metadata, stream.pointee.metadata, 0)
        }
        status = avio_open(&target.pointee.pb, output, AVIO_FLAG_WRITE)
        guard status >= 0 else { throw CodecError(.writeFailed, "cannot create \(output)", status: status) }
        defer { avio_closep(&target.pointee.pb) }
        status = avformat_write_header(target, nil)
        guard status >= 0 else { throw CodecError(.muxerFailed, "cannot write the \(container.muxerName) header", status: status) }

        guard let packet = av_packet_alloc() else { throw CodecError(.muxerFailed, "out of memory") }
        var packetPointer: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&packetPointer) }
        while av_read_frame(source, packet) >= 0 {
            let index = Int(packet.pointee.stream_index)
            guard index < Int(target.pointee.nb_streams), let from = source.pointee.streams[index],
                  let to = target.pointee.streams[index] else {
                av_packet_unref(packet)
                continue
            }
            av_packet_rescale_ts(packet, from.pointee.time_base, to.pointee.time_base)
            packet.pointee.pos = -1
            status = av_interleaved_write_frame(target, packet)
            guard status >= 0 else { throw CodecError(.writeFailed, "cannot write \(output)", status: status) }
        }
        status = av_write_trailer(target)
        guard status >= 0 else { throw CodecError(.writeFailed, "cannot finish \(output)", status: status) }
    }
}
