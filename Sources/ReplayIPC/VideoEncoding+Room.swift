import ReplayMedia

/// How much room a recording needs on disk, to refuse a place that cannot hold it before
/// anything is recorded (the CLI's `--output`, the daemon's store).
extension VideoEncoding {
    /// A generous guess at what `seconds` of a recording take (1080p screen content, two
    /// audio tracks): the bit rate asked for, else a rate well above what each quality step
    /// gave on moving screen content.
    public func estimatedBytes(seconds: Double) -> Int64 {
        let videoBitsPerSecond: Double = if let bitRate { Double(bitRate) } else {
            switch quality {
            case .low: 2_000_000
            case .high: 12_000_000
            case .lossless: 100_000_000
            case .medium, nil: 6_000_000
            }
        }
        let audioBitsPerSecond = 2 * 192_000.0
        return Int64((videoBitsPerSecond + audioBitsPerSecond) * seconds / 8)
    }
}
