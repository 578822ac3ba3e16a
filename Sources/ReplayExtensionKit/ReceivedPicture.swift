@_spi(OpenReplayKitInternal) public import ReplayIPC
@_spi(OpenReplayKitInternal) public import ReplayMedia

/// How a decoded `video` message becomes the handler's picture: in place in its surface (no
/// copy), read-only, in the format the message names. The kit and `BroadcastHarness` both
/// build pictures here, so a handler tested offline sees what it will see live.
@_spi(OpenReplayKitInternal) public enum ReceivedPicture {
    /// The sample `frame` describes, whose bytes lie in `surface` (the whole surface, mapped
    /// read-only); `release` runs when the last reference to the picture is gone.
    @_spi(OpenReplayKitInternal) public static func sample(of frame: BroadcastMessage.VideoFrame, in surface: UnsafeRawBufferPointer,
                               release: @escaping @Sendable () -> Void) throws(BroadcastExtension.Failure) -> VideoSample {
        let width = Int(frame.width), height = Int(frame.height)
        let base = frame.planes[0].offset
        let luma = UInt64(width * height)
        // ReplayMedia's pictures are tightly packed I420; that is what replayd sends. The codec
        // has checked that every plane lies inside the surface.
        guard frame.planes[0].stride == frame.width, frame.planes[1].offset == base + luma,
              frame.planes[2].offset == base + luma + luma / 4, frame.planes[1].stride == frame.width / 2,
              frame.planes[2].stride == frame.width / 2 else {
            throw BroadcastExtension.Failure(description: "video layout is not packed I420")
        }
        let region = UnsafeRawBufferPointer(rebasing: surface[Int(base)..<Int(base) + PixelBuffer.byteCount(width: width, height: height)])
        let storage = PixelStorage(borrowingReadOnly: region, release: release)
        return VideoSample(time: MediaTime(nanoseconds: frame.time),
                           pixels: PixelBuffer(width: width, height: height, format: frame.pictureFormat, storage: storage),
                           isRepeat: frame.additions?.isRepeat ?? false, orientation: frame.orientation.media)
    }
}

/// How many frames replayd dropped, as each 1.1 `video` message and each 1.2 `dropped` message
/// tells the total: the kit and the harness both turn it into `broadcastDroppedFrames(_:total:)`
/// calls here.
@_spi(OpenReplayKitInternal) public struct DropCounter: Sendable {
    @_spi(OpenReplayKitInternal) public private(set) var total = 0
    @_spi(OpenReplayKitInternal) public init() {}

    /// The drops `frame` newly reports (count since the last, total), if any.
    @_spi(OpenReplayKitInternal) public mutating func update(with frame: BroadcastMessage.VideoFrame) -> (count: Int, total: Int)? {
        guard let reported = frame.additions.map({ Int($0.framesDropped) }) else { return nil }
        return update(total: reported)
    }

    /// The drops a total of `reported` newly reports, if any: a total never goes back.
    @_spi(OpenReplayKitInternal) public mutating func update(total reported: Int) -> (count: Int, total: Int)? {
        guard reported > total else { return nil }
        defer { total = reported }
        return (reported - total, reported)
    }
}

/// When the handler's next tick is due, on whichever clock drives it (the monotonic clock
/// live, the harness's own in tests): one rule for the kit and the harness.
@_spi(OpenReplayKitInternal) public struct TickClock: Sendable {
    private var generation = 0
    private var interval: Duration?
    /// Nanoseconds when the next tick is due; nil: no tick asked for.
    @_spi(OpenReplayKitInternal) public private(set) var next: Int64?

    @_spi(OpenReplayKitInternal) public init() {}

    /// Takes up a new request, if the handler made one since the last look, from `now`.
    @_spi(OpenReplayKitInternal) public mutating func refresh(_ request: BroadcastSampleHandler.TickRequest, now: Int64) {
        guard request.generation != generation else { return }
        generation = request.generation
        interval = request.interval
        next = interval.map { now + Self.nanoseconds($0) }
    }

    /// After a tick at `now`: the next one an interval after the one that was due, or after
    /// `now` if more than one was missed.
    @_spi(OpenReplayKitInternal) public mutating func ticked(at now: Int64) {
        guard let interval, let due = next else { return }
        let step = Self.nanoseconds(interval)
        next = due + step > now ? due + step : now + step
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
