import CFFmpeg

/// H.264's and HEVC's two layouts of NAL units: Annex B (start codes: what x264 and x265
/// write) and ISO (length-prefixed, parameter sets in an avcC or hvcC record: what MP4 and
/// Matroska keep). A trim compares parameter sets across the two and re-lays an encoder's
/// packets for a stream kept in ISO layout.
enum NALUnits {
    /// The parameter sets (H.264: SPS, PPS; HEVC: VPS, SPS, PPS) in `extradata` of either
    /// layout, in order; nil for another codec or a record it cannot read.
    static func parameterSets(_ extradata: [UInt8], codec: AVCodecID) -> [[UInt8]]? {
        guard codec == AV_CODEC_ID_H264 || codec == AV_CODEC_ID_HEVC, !extradata.isEmpty else { return nil }
        let units = isISO(extradata) ? isoRecordUnits(extradata, codec: codec) : annexBUnits(extradata[...]).map(Array.init)
        return units?.filter { isParameterSet($0, codec: codec) }
    }

    /// avcC and hvcC records start with version 1; Annex B with a zero byte.
    static func isISO(_ extradata: [UInt8]) -> Bool { extradata.first == 1 }

    /// How many bytes each unit's length takes in the ISO record's packets.
    static func lengthSize(_ extradata: [UInt8], codec: AVCodecID) -> Int {
        let index = codec == AV_CODEC_ID_HEVC ? 21 : 4
        return extradata.count > index ? Int(extradata[index] & 3) + 1 : 4
    }

    /// An Annex B packet in ISO layout, each unit behind its length; parameter sets are left
    /// out (the stream's record has them).
    static func lengthPrefixed(_ annexB: ArraySlice<UInt8>, codec: AVCodecID, lengthSize: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(annexB.count + 16)
        for unit in annexBUnits(annexB) where !isParameterSet(Array(unit.prefix(2)), codec: codec) {
            for shift in stride(from: (lengthSize - 1) * 8, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: unit.count >> shift)) }
            out.append(contentsOf: unit)
        }
        return out
    }

    private static func isParameterSet(_ unit: [UInt8], codec: AVCodecID) -> Bool {
        guard let header = unit.first else { return false }
        if codec == AV_CODEC_ID_HEVC { return (32...34).contains((header >> 1) & 0x3f) }
        return header & 0x1f == 7 || header & 0x1f == 8
    }

    /// The units between start codes (00 00 01, or 00 00 00 01 whose first zero ends no unit).
    static func annexBUnits(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var starts: [(code: Int, payload: Int)] = []
        var index = bytes.startIndex
        while index + 2 < bytes.endIndex {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                starts.append((index, index + 3))
                index += 3
            } else {
                index += 1
            }
        }
        return starts.indices.compactMap { position in
            var end = position + 1 < starts.count ? starts[position + 1].code : bytes.endIndex
            // Trailing zeros belong to the next start code (or pad the stream).
            while end > starts[position].payload, bytes[end - 1] == 0 { end -= 1 }
            return end > starts[position].payload ? bytes[starts[position].payload..<end] : nil
        }
    }

    private static func isoRecordUnits(_ record: [UInt8], codec: AVCodecID) -> [[UInt8]]? {
        var reader = Reader(bytes: record)
        var units: [[UInt8]] = []
        if codec == AV_CODEC_ID_H264 {
            guard reader.skip(5), let spsCount = reader.byte() else { return nil }
            for _ in 0..<(spsCount & 0x1f) { guard let unit = reader.unit() else { return nil }; units.append(unit) }
            guard let ppsCount = reader.byte() else { return nil }
            for _ in 0..<ppsCount { guard let unit = reader.unit() else { return nil }; units.append(unit) }
        } else {
            guard reader.skip(22), let arrays = reader.byte() else { return nil }
            for _ in 0..<arrays {
                guard reader.skip(1), let high = reader.byte(), let low = reader.byte() else { return nil }
                for _ in 0..<(Int(high) << 8 | Int(low)) { guard let unit = reader.unit() else { return nil }; units.append(unit) }
            }
        }
        return units
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        mutating func skip(_ count: Int) -> Bool {
            guard position + count <= bytes.count else { return false }
            position += count
            return true
        }

        mutating func byte() -> UInt8? {
            guard position < bytes.count else { return nil }
            defer { position += 1 }
            return bytes[position]
        }

        /// A unit behind a 16-bit length.
        mutating func unit() -> [UInt8]? {
            guard let high = byte(), let low = byte() else { return nil }
            let length = Int(high) << 8 | Int(low)
            guard position + length <= bytes.count else { return nil }
            defer { position += length }
            return Array(bytes[position..<position + length])
        }
    }
}
