public import ReplayMedia
public import ReplayIPC
import Synchronization

/// Subclass this to build an upload extension, as ReplayKit's RPBroadcastSampleHandler: the
/// daemon captures, and hands the samples to your `processSampleBuffer` in a sandboxed
/// process limited to 50 MB; you encode and upload them.
///
/// Every callback arrives on one thread, in order: started, annotated, samples, paused,
/// resumed, finished. A video sample's pixels are the daemon's shared surface, mapped
/// read-only: no copy was made, and the surface goes back to the daemon when your last
/// reference to the picture is gone, so hold pictures only as long as you need them (the
/// daemon drops frames while all its surfaces are with you).
open class BroadcastSampleHandler {
    /// Where `finishBroadcast`, `updateServiceInfo` and `updateBroadcastURL` go: the daemon,
    /// or a test harness.
    @_spi(OpenReplayKitInternal) public var host: (any BroadcastHost)?

    /// A handler not yet connected: `BroadcastExtension.run` or a `BroadcastHarness` connects it.
    public init() {}

    /// The broadcast began; `setupInfo` holds what the person entered in the picker
    /// (account, stream key, title…). Returning takes the start; calling
    /// `finishBroadcast(error:)` in it fails the start with that message.
    open func broadcastStarted(setupInfo: [String: String]) {}
    /// The person paused: no samples arrive until `broadcastResumed` (a service may show a
    /// still picture meanwhile).
    open func broadcastPaused() {}
    /// Samples flow again after a pause.
    open func broadcastResumed() {}
    /// The broadcast ended (stopped, or after your own `finishBroadcast(error:)`): send what
    /// is queued and close the stream, within 5 s of replayd's `finished` (then it kills the
    /// sandbox); the process exits when this returns.
    open func broadcastFinished() {}
    /// The broadcast's app (`executable`, `name`: the app that asked through the picker, else
    /// the one in focus; empty when there is none), so a service can help viewers find it.
    open func broadcastAnnotated(applicationInfo: [String: String]) {}
    /// A picture, or a period of one audio source's sound (`AudioBuffer.source`: the app's
    /// or the microphone's): the sample says what it is, in one place. Return promptly: the
    /// heartbeat is answered on this same thread, and a callback blocked for 5 s is taken as hung.
    open func processSampleBuffer(_ sample: SampleBuffer) {}
    /// replayd dropped `count` pictures since the last call (`total` in this broadcast): every
    /// surface was with you, capture fell behind, or the connection would not take them. It
    /// comes on the callback thread right before the next picture replayd sends, so a long
    /// run of drops is told when pictures flow again. (`replay broadcast status` counts the same.)
    open func broadcastDroppedFrames(_ count: Int, total: Int) {}
    /// A tick you asked for with `requestTicks(every:)`: `time` is now on `CLOCK_MONOTONIC`, the
    /// samples' clock. For time-based work that must not wait for samples, which stop on a
    /// still screen (a keep-alive, a keyframe, a periodic report). It comes on the callback
    /// thread between samples, paused or not; ticks missed while a callback ran late are not
    /// queued up: one tick comes, then the rhythm goes on from it.
    open func broadcastTick(at time: MediaTime) {}

    /// Asks for `broadcastTick(at:)` every `interval` (at least 10 ms) from now on, until the
    /// broadcast ends; nil stops the ticks. Call it from a callback (`broadcastStarted` is
    /// the usual place); ticks start once the broadcast has started.
    public final func requestTicks(every interval: Duration?) {
        ticks.withLock { request in
            request.interval = interval.map { max($0, .milliseconds(10)) }
            request.generation &+= 1
        }
    }

    /// The tick the handler asked for, and a count of its requests: a new request restarts
    /// the rhythm from the moment it was made.
    @_spi(OpenReplayKitInternal) public struct TickRequest: Sendable, Equatable {
        @_spi(OpenReplayKitInternal) public var interval: Duration?
        @_spi(OpenReplayKitInternal) public var generation = 0
    }

    private let ticks = Mutex(TickRequest())
    /// The handler's latest tick request.
    @_spi(OpenReplayKitInternal) public var tickRequest: TickRequest { ticks.withLock { $0 } }

    /// Ends the broadcast, showing `error` to the person (and the host app).
    public final func finishBroadcast(error: String) {
        host?.send(.finish(error: error))
    }

    /// Key-value information for the host app (viewer count, stream health…).
    public final func updateServiceInfo(_ info: [String: String]) {
        host?.send(.serviceInfo(info))
    }

    /// Where viewers watch; the host app and the CLI show it.
    public final func updateBroadcastURL(_ url: String) {
        host?.send(.broadcastURL(url))
    }
}

/// The other end of a handler: the daemon's connection, or `ReplayExtensionTesting`'s harness.
@_spi(OpenReplayKitInternal) public protocol BroadcastHost: Sendable {
    func send(_ message: BroadcastMessage)
}
