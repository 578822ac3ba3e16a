public import ReplayMedia
package import ReplayIPC
import Synchronization

/// Which stream a sample belongs to, as ReplayKit's RPSampleBufferType.
public enum SampleBufferType: Sendable, Equatable {
    case video
    case appAudio
    case micAudio
}

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
    package var host: (any BroadcastHost)?

    public init() {}

    /// The broadcast began; `setupInfo` holds what the person entered in the picker
    /// (account, stream key, title…).
    open func broadcastStarted(setupInfo: [String: String]) {}
    open func broadcastPaused() {}
    open func broadcastResumed() {}
    open func broadcastFinished() {}
    /// The app in focus (`bundleIdentifier`-like `executable`, `name`), so a service can help
    /// viewers find the broadcast.
    open func broadcastAnnotated(applicationInfo: [String: String]) {}
    open func processSampleBuffer(_ sample: SampleBuffer, type: SampleBufferType) {}

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
package protocol BroadcastHost: Sendable {
    func send(_ message: BroadcastMessage)
}
