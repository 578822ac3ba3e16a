import CFFmpeg
public import ReplayMedia
import ReplaySystem
import Synchronization

/// One encoded packet in a clip buffer, with the movie track it belongs to; or, once a
/// spilling buffer has written a keyframe group to disk, that whole group as one entry.
struct ClipPacket: RingPacket {
    enum Payload {
        case memory(EncodedPacket)
        case disk(SpilledGroup)
    }
    var payload: Payload
    /// 0 the video; 1… the audio tracks in the format's order (0 for a group, which starts on a picture).
    let stream: Int
    /// A group's: its first packet's (its keyframe's).
    let time: MediaTime
    /// A group's: its packets' bytes.
    let byteCount: Int
    let isKeyframe: Bool
    var startsClip: Bool { stream == 0 && isKeyframe }

    init(_ packet: EncodedPacket, stream: Int) {
        payload = .memory(packet)
        self.stream = stream
        time = packet.time
        byteCount = packet.byteCount
        isKeyframe = packet.isKeyframe
    }

    /// The group of `packets` (from a keyframe on), written to disk as `group`.
    init(group: SpilledGroup, of packets: ArraySlice<ClipPacket>) {
        payload = .disk(group)
        stream = 0
        time = packets.first?.time ?? .zero
        byteCount = packets.reduce(0) { $0 + $1.byteCount }
        isKeyframe = true
    }

    var isInMemory: Bool {
        if case .memory = payload { return true }
        return false
    }

    /// Where its bytes are in the spill file, if there.
    var spilledOffset: Int64? {
        if case .disk(let group) = payload { return group.offset }
        return nil
    }

    /// Its packets for the muxer, each of its own (the caller frees them), with their tracks
    /// and decode times: one, or a spilled group's, read back.
    func packets(from spill: ClipSpillFile?) throws(CodecError) -> [(packet: UnsafeMutablePointer<AVPacket>, stream: Int, time: MediaTime)] {
        switch payload {
        case .memory(let encoded):
            guard let copy = av_packet_clone(encoded.packet) else { throw CodecError(.muxerFailed, "out of memory") }
            return [(copy, stream, time)]
        case .disk(let group):
            guard let spill else { throw CodecError(.muxerFailed, "a spilled group without its file") }
            return try group.load(from: spill)
        }
    }
}

/// What a save wrote.
public struct SavedClip: Sendable, Equatable {
    /// From its first picture (a keyframe) to its last packet.
    public let duration: MediaTime
    public let videoFrames: Int
    public let bytes: Int64
    /// The first picture is a keyframe (always, as the ring starts at one; kept for the record).
    public let startsOnKeyframe: Bool
}

/// A movie that is never written, only kept: the last minutes of encoded video and audio in
/// a `PacketRing`, from which a clip is saved as a fragmented MP4 whenever asked, while
/// encoding goes on. A keyframe comes at least once a second, so a clip starts within a
/// second of what was asked. As a `MovieSink` it takes a recording session's samples as a
/// movie file would.
///
/// A long one spills: given a spill file, each keyframe group goes there as the group
/// completes, and the ring keeps one entry for it (where it is), so memory holds one group's
/// packets and a few dozen bytes a second whatever the length; a save reads them back.
public final class ClipBuffer: MovieSink, @unchecked Sendable {
    // @unchecked: the encoders are used by the session's writer thread only; the ring is
    // behind a mutex, which `save` takes just long enough to copy the packets' references.
    public let format: MovieFormat
    private let video: VideoEncoder
    private let audio: [(source: AudioSource, encoder: AudioEncoder)]
    private let held: Mutex<Held>
    private let spill: ClipSpillFile?
    private var lastKeyframe: MediaTime?
    public private(set) var videoFrames = 0

    private struct Held {
        var ring: PacketRing<ClipPacket>
        /// Saves reading spilled packets now: the space of groups the ring lets go meanwhile
        /// is punched out only once they are done.
        var readers = 0
    }

    /// Keeps up to `length` and up to `byteBudget` bytes of encoded packets; with
    /// `spillPath`, their bytes in that file (see `ClipSpillFile.init`), not in memory.
    public init(format: MovieFormat, length: MediaTime, byteBudget: Int, spillPath: String? = nil) throws(CodecError) {
        av_log_set_level(AV_LOG_ERROR)
        self.format = format
        video = try VideoEncoder(codec: format.codec, width: format.width, height: format.height, pictureFormat: format.picture,
                                 fps: format.fps, preset: format.preset, bitRate: format.bitRate, crf: format.crf,
                                 quality: format.quality, keyframeInterval: format.fps, frameRateMode: format.frameRateMode)
        audio = try format.audioSources.map { source throws(CodecError) in
            (source, try AudioEncoder(sampleRate: format.sampleRate, channels: format.channels))
        }
        held = Mutex(Held(ring: PacketRing(maxDuration: length, maxBytes: byteBudget)))
        do {
            spill = try spillPath.map { path throws(SystemError) in try ClipSpillFile(path: path) }
        } catch {
            throw CodecError(.writeFailed, "cannot use the clip buffer's spill file: \(error)")
        }
    }

    /// What the ring holds now: its payload bytes.
    public var bytesWritten: Int64 { Int64(held.withLock { $0.ring.bytes }) }
    /// How far back a save can reach now.
    public var bufferedDuration: MediaTime { held.withLock { $0.ring.span } }
    /// The bytes of packets held in memory now (the group being encoded, where it spills).
    public var bytesInMemory: Int {
        held.withLock { $0.ring.newest(while: \.isInMemory).reduce(0) { $0 + $1.byteCount } }
    }

    public func append(_ sample: VideoSample, at time: MediaTime) throws(CodecError) {
        // A still screen sends few pictures: a keyframe is asked for once a second of movie time.
        if lastKeyframe.map({ time - $0 >= MediaTime(nanoseconds: 1_000_000_000) }) ?? true {
            video.keyframeRequested = true
            lastKeyframe = time
        }
        try video.encode(sample.pixels, pts: video.pts(time)) { packet throws(CodecError) in try keep(packet, stream: 0, from: video.context) }
        videoFrames += 1
    }

    public func append(audio samples: [Float], source: AudioSource) throws(CodecError) {
        guard let index = audio.firstIndex(where: { $0.source == source }) else { return }
        let encoder = audio[index].encoder
        try encoder.encode(samples) { packet throws(CodecError) in try keep(packet, stream: index + 1, from: encoder.context) }
    }

    /// Flushes what the encoders still hold into the ring, where it can still be saved.
    public func finish() throws(CodecError) {
        try video.finish { packet throws(CodecError) in try keep(packet, stream: 0, from: video.context) }
        for (index, track) in audio.enumerated() {
            try track.encoder.finish { packet throws(CodecError) in try keep(packet, stream: index + 1, from: track.encoder.context) }
        }
    }

    public func abandon() {}

    private func keep(_ packet: UnsafeMutablePointer<AVPacket>, stream: Int, from codec: UnsafeMutablePointer<AVCodecContext>)
        throws(CodecError) {
        let kept = ClipPacket(try EncodedPacket(referencing: packet, track: stream == 0 ? .video : .audio,
                                                timeBase: codec.pointee.time_base), stream: stream)
        try held.withLock { (held: inout Held) throws(CodecError) in
            // A keyframe: the group before it is complete, and goes to disk.
            if let spill, kept.startsClip { try Self.spillGroup(&held.ring, into: spill) }
            held.ring.append(kept)
            if let spill, held.readers == 0 { spill.release(before: held.ring.oldest?.spilledOffset ?? spill.end) }
        }
    }

    /// Writes the ring's packets still in memory (the group that a keyframe just completed)
    /// into `spill`, in one write, and keeps one entry for them from now on.
    private static func spillGroup(_ ring: inout PacketRing<ClipPacket>, into spill: ClipSpillFile) throws(CodecError) {
        let group = ring.newest(while: \.isInMemory)
        guard let first = group.first, first.startsClip else { return }
        let records = SpilledGroup.records(group.compactMap { kept -> (packet: UnsafeMutablePointer<AVPacket>, stream: Int, time: MediaTime)? in
            guard case .memory(let encoded) = kept.payload else { return nil }
            return (encoded.packet, kept.stream, kept.time)
        })
        let start: Int64
        do { start = try records.withUnsafeBytes { (bytes) throws(SystemError) in try spill.append(bytes) } } catch {
            throw CodecError(.writeFailed, "cannot keep the clip buffer on disk: \(error)")
        }
        ring.replaceNewest(group.count, with: [ClipPacket(group: SpilledGroup(offset: start, length: records.count), of: group)])
    }

    /// Writes the last `duration` (nil: all that is kept) into a new fragmented MP4 at
    /// `path`, starting on a keyframe, timed from zero. Encoding goes on meanwhile: only the
    /// copy of the packets' references holds the ring up. Throws when nothing is kept yet.
    public func save(last duration: MediaTime?, to path: String) throws(CodecError) -> SavedClip {
        let packets = held.withLock { held in
            held.readers += 1
            return held.ring.last(duration)
        }
        defer { held.withLock { $0.readers -= 1 } }
        guard let first = packets.first, first.startsClip else {
            throw CodecError(.muxerFailed, "nothing is buffered yet")
        }
        let sink: FileSink
        do { sink = try FileSink(path: path) } catch { throw CodecError(.writeFailed, "cannot create the clip's file: \(error)") }
        var container: UnsafeMutablePointer<AVFormatContext>?
        var status = avformat_alloc_output_context2(&container, nil, "mp4", nil)
        guard status >= 0, let container else { throw CodecError(.muxerFailed, "cannot create the MP4 muxer", status: status) }
        defer { avformat_free_context(container) }
        container.pointee.pb = sink.context
        container.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        let codecs = [video.context] + audio.map(\.encoder.context)
        for (index, codec) in codecs.enumerated() {
            guard let stream = avformat_new_stream(container, nil) else { throw CodecError(.muxerFailed, "out of memory") }
            status = avcodec_parameters_from_context(stream.pointee.codecpar, codec)
            guard status >= 0 else { throw CodecError(.muxerFailed, "cannot describe a track", status: status) }
            stream.pointee.time_base = codec.pointee.time_base
            // The clip does not begin with the encoder's first packet: no priming to skip (the
            // packets' times are moved by it instead, below).
            stream.pointee.codecpar.pointee.initial_padding = 0
            if index > 0 {
                av_dict_set(&stream.pointee.metadata, "handler_name", audio[index - 1].source == .app ? "app audio" : "microphone", 0)
            }
        }
        var options: OpaquePointer?
        av_dict_set(&options, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0)
        status = avformat_write_header(container, &options)
        av_dict_free(&options)
        guard status >= 0 else { throw CodecError(.muxerFailed, "cannot write the clip's header", status: status) }

        // Every track is moved back by the first keyframe's time, so the clip starts at zero.
        let origin = first.time
        var frames = 0
        var end = MediaTime.zero
        for entry in packets {
            // A spilled group comes back whole; each of its packets is freed once written, and
            // those of the rest if one fails.
            let unwritten = try entry.packets(from: spill)
            var next = 0
            defer { for index in next..<unwritten.count { var owned: UnsafeMutablePointer<AVPacket>? = unwritten[index].packet; av_packet_free(&owned) } }
            while next < unwritten.count {
                let (copy, track, time) = unwritten[next]
                next += 1
                var owned: UnsafeMutablePointer<AVPacket>? = copy
                defer { av_packet_free(&owned) }
                // Audio encoded just before the first keyframe but heard after: as `PacketRing.last` leaves it out.
                if time < origin { continue }
                guard codecs.indices.contains(track), let stream = container.pointee.streams[track] else {
                    throw CodecError(.muxerFailed, "a packet of no track of this clip")
                }
                let codec = codecs[track], codecBase = codec.pointee.time_base
                // An audio packet is stamped before its encoder's priming delay (AAC: 1024 samples);
                // out of its first place in the track it is heard that much later.
                let priming = track == 0 ? 0
                    : av_rescale_q(Int64(codec.pointee.initial_padding), AVRational(num: 1, den: codec.pointee.sample_rate), codecBase)
                let shift = av_rescale_q(origin.nanoseconds, AVRational(num: 1, den: 1_000_000_000), codecBase) - priming
                if copy.pointee.pts != CFFmpeg_AV_NOPTS_VALUE() { copy.pointee.pts -= shift }
                if copy.pointee.dts != CFFmpeg_AV_NOPTS_VALUE() { copy.pointee.dts -= shift }
                av_packet_rescale_ts(copy, codecBase, stream.pointee.time_base)
                copy.pointee.stream_index = Int32(track)
                if track == 0 { frames += 1 }
                end = max(end, time - origin)
                status = av_interleaved_write_frame(container, copy)
                guard status >= 0 else { throw CodecError(.writeFailed, "cannot write the clip", status: status) }
            }
        }
        status = av_write_trailer(container)
        sink.commit()
        if let error = sink.failure { throw CodecError(.writeFailed, "cannot write the clip: \(error)") }
        guard status >= 0 else { throw CodecError(.muxerFailed, "cannot finish the clip", status: status) }
        sink.sync()
        return SavedClip(duration: end, videoFrames: frames, bytes: sink.bytesWritten, startsOnKeyframe: first.startsClip)
    }
}
