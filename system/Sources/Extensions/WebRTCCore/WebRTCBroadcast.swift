import Dispatch
package import ReplayMedia
package import Synchronization

/// What `WebRTCBroadcast` needs of an extension's shared state: whether the host stopped the
/// broadcast and whether it failed. Each extension keeps its own fields beside these, under
/// the same lock, so that a step reading one and writing another (a WHIP resource, a Janus
/// session) is atomic with the end.
package protocol WebRTCBroadcastState: Sendable {
    init()
    var finished: Bool { get set }
    var failed: Bool { get set }
}

/// The part of a broadcast the WebRTC and the video call extensions share: one
/// `WebRTCSession` for the setup's video, fed the broadcast's samples (`WebRTCFeed`); a tick
/// once a second for the peers' statistics; and one end, the host's stop or the first failure.
package final class WebRTCBroadcast<State: WebRTCBroadcastState>: @unchecked Sendable {
    // @unchecked: `feed` is touched only on the broadcast's callback thread; `session` and
    // `ticks` are set when the broadcast starts and cleared when it finishes, as the handlers'
    // own fields were; the rest is behind `state`.
    package let state = Mutex(State())
    package private(set) var session: WebRTCSession?
    private var feed: WebRTCFeed?
    private var ticks: (any DispatchSourceTimer)?
    private let queue: DispatchQueue

    /// - Parameter label: the tick queue's name, for a debugger's thread list.
    package init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Starts the session for `video`; its peers' state changes and errors go to the two
    /// handlers (on GStreamer's threads).
    package func start(video: WebRTCVideoSetup, peerChanged: @escaping @Sendable (Int32, WebRTCSession.PeerState) -> Void,
                       peerFailed: @escaping @Sendable (Int32, String) -> Void) throws -> WebRTCSession {
        let session = try WebRTCSession.start(for: video, state: peerChanged, error: peerFailed)
        self.session = session
        feed = WebRTCFeed(setup: video)
        return session
    }

    /// Calls `tick` once a second, from a queue of its own, until `stop`.
    package func tick(every tick: @escaping @Sendable () -> Void) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler(handler: tick)
        timer.resume()
        ticks = timer
    }

    /// One sample into the session (on the broadcast's callback thread).
    package func feed(_ sample: SampleBuffer) {
        guard let session else { return }
        feed?.feed(sample, into: session)
    }

    /// The broadcast is finishing: no more ticks (nor the service info they send).
    package func stopTicks() {
        ticks?.cancel()
    }

    /// The broadcast finished: the session goes with its peers, once nothing else holds it.
    package func close() {
        session = nil
    }

    /// Whether a failure is the broadcast's end to report: only the first, and none after the
    /// host stopped it.
    package func failsFirst() -> Bool {
        state.withLock { state in
            defer { state.failed = true }
            return !state.failed && !state.finished
        }
    }
}
