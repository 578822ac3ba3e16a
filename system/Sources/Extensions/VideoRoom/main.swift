import CWebRTC
import FoundationEssentials
import ReplayExtensionKit
import ReplayMedia
import ReplayProcessing
import ReplaySystem
import ReplayWebRTC
import Synchronization

/// The `videoroom` upload extension: shares the screen into a video call by joining a room
/// of a Janus server's VideoRoom plugin as one more participant, through Janus's own HTTP
/// API, and publishing H.264 (constrained baseline) and Opus through GStreamer's webrtcbin.
/// The server fans the stream out to every participant. It leaves the room when the
/// broadcast ends, rejoins after the server went away (for up to `reconnect-timeout`), and
/// its video bitrate follows the server's receiver reports and estimate (REMB).
final class VideoRoomHandler: BroadcastSampleHandler, @unchecked Sendable {
    // @unchecked: what the other threads share is immutable once started or behind `state`.
    private var settings: VideoRoomSettings?
    private let broadcast = WebRTCBroadcast<SharedState>(label: "videoroom-stats")
    private var session: WebRTCSession? { broadcast.session }

    struct SharedState: WebRTCBroadcastState {
        var finished = false
        var failed = false
        /// The session with the server now, and the peer publishing through it.
        var janus: JanusClient?
        var peer: Int32?
        var controller: BitrateController?
        /// joining, published or rejoining.
        var phase = "joining"
        var participant: Int64?
        var joins = 0
        var infoFilter = ServiceInfoFilter()
    }

    /// Backoff between attempts to rejoin, in seconds.
    static let backoff = [0.5, 1, 2, 4]
    /// The first join is given this long: a wrong address fails the broadcast soon.
    static let firstJoinTimeout = 10.0

    override func broadcastStarted(setupInfo: [String: String]) {
        let settings: VideoRoomSettings
        let session: WebRTCSession
        do {
            settings = try VideoRoomSettings(setup: setupInfo)
            session = try broadcast.start(video: settings.video,
                                          peerChanged: { [weak self] peer, state in self?.peerChanged(peer, state) },
                                          peerFailed: { [weak self] peer, message in self?.peerFailed(peer, message) })
        } catch {
            fail("\(error)")
            return
        }
        self.settings = settings
        Threads.detach { [self] in stayInRoom(session: session, settings: settings) }
        broadcast.tick { [weak self] in self?.adaptBitrate() }
    }

    override func processSampleBuffer(_ sample: SampleBuffer) {
        broadcast.feed(sample)
    }

    override func broadcastFinished() {
        let janus = broadcast.state.withLock { state -> JanusClient? in
            state.finished = true
            return state.janus
        }
        broadcast.stopTicks()
        // Destroying the session takes the publisher out of the room for everyone; then the
        // long poll still waiting is cut short.
        janus?.close()
        janus?.cancel()
        broadcast.close()
    }

    // MARK: the room

    /// Joins and publishes; after the server or the connection went away, joins again, until
    /// the broadcast ends or the outage outlasts its limit.
    private func stayInRoom(session: WebRTCSession, settings: VideoRoomSettings) {
        var outageSince = MonotonicClock.nanoseconds()
        var everPublished = false
        var attempt = 0
        while true {
            let janus = JanusClient(server: settings.server)
            guard broadcast.state.withLock({ state -> Bool in
                state.janus = janus
                return !state.finished
            }) else { return }
            let failure: any Error
            do {
                try publish(through: janus, session: session, settings: settings)
                everPublished = true
                attempt = 0
                try listen(to: janus)
                return
            } catch {
                failure = error
            }
            if let peer = broadcast.state.withLock({ state in defer { state.peer = nil }; return state.peer }) { session.remove(peer: peer) }
            janus.close(timeout: 1)
            if broadcast.state.withLock({ $0.finished }) { return }
            if let refusal = failure as? JanusClient.Failure, refusal.isPermanent {
                fail("room \(settings.room) on \(janus.displayServer): \(refusal)")
                return
            }
            if attempt == 0 {
                if everPublished { outageSince = MonotonicClock.nanoseconds() }
                broadcast.state.withLock { $0.phase = everPublished ? "rejoining" : "joining" }
                noteInfo()
            }
            let limit = everPublished ? settings.reconnectTimeout : min(Self.firstJoinTimeout, settings.reconnectTimeout)
            let waited = Double(MonotonicClock.nanoseconds() - outageSince) / 1e9
            if waited >= limit {
                let what = everPublished ? "lost room \(settings.room) and could not rejoin" : "could not join room \(settings.room)"
                fail("\(what) for \(Int(limit.rounded())) s: \(failure)")
                return
            }
            let pause = min(Self.backoff[min(attempt, Self.backoff.count - 1)], max(0.1, limit - waited))
            attempt += 1
            let wakeAt = MonotonicClock.nanoseconds() + Int64(pause * 1e9)
            while MonotonicClock.nanoseconds() < wakeAt, !broadcast.state.withLock({ $0.finished }) { Threads.sleep(seconds: 0.05) }
        }
    }

    /// Creates a session, joins the room as a publisher and publishes one send-only peer.
    private func publish(through janus: JanusClient, session: WebRTCSession, settings: VideoRoomSettings) throws {
        try janus.open()
        let joined = try janus.request(settings.joinRequest)
        let (peer, offer) = try session.offer()
        let finished = broadcast.state.withLock { state -> Bool in
            state.peer = peer
            // Kept across rejoins: the way to the server has not changed because it restarted.
            if state.controller == nil { state.controller = settings.video.controller() }
            state.participant = joined.pluginData?["id"]?.integer
            return state.finished
        }
        if finished { return }
        // No bitrate of our own in the publish: Janus's estimate (REMB) is then the room's cap
        // (our own maximum bounds us anyway).
        let published = try janus.request(["request": "publish", "audio": true, "video": true],
                                          jsep: ["type": "offer", "sdp": .string(offer)])
        guard let answer = published.jsep?["sdp"]?.string, published.jsep?["type"]?.string == "answer" else {
            throw JanusClient.Failure.malformed(server: janus.displayServer, reason: "answered the publish without an SDP answer")
        }
        try session.setAnswer(answer, peer: peer)
        session.requestKeyframe()
        broadcast.state.withLock {
            $0.phase = "published"
            $0.joins += 1
        }
        noteInfo()
    }

    /// Follows the session's events until it ends: returns when the broadcast finished,
    /// throws when the server hung up on the peer or the session was lost.
    private func listen(to janus: JanusClient) throws {
        while !broadcast.state.withLock({ $0.finished }) {
            for event in try janus.poll() where event.kind == "hangup" {
                throw JanusClient.Failure.sessionLost(reason: "the server hung up on the stream (\(event.body["reason"]?.description ?? "no reason"))")
            }
        }
    }

    // MARK: the peer

    private func peerChanged(_ peer: Int32, _ connection: WebRTCSession.PeerState) {
        guard connection == .failed, let janus = broadcast.state.withLock({ $0.peer == peer ? $0.janus : nil }) else { return }
        // The loop rejoins once its poll is cut short.
        janus.cancel()
    }

    private func peerFailed(_ peer: Int32, _ message: String) {
        if peer == 0 {
            fail("WebRTC: \(message)")
        } else if let janus = broadcast.state.withLock({ $0.peer == peer ? $0.janus : nil }) {
            janus.cancel()
        }
    }

    /// Once a second: the server's receiver reports and its estimate (REMB) move the bitrate
    /// controller.
    private func adaptBitrate() {
        guard let session, let peer = broadcast.state.withLock({ $0.peer }), let stats = session.stats(peer: peer) else {
            noteInfo()
            return
        }
        let rate = broadcast.state.withLock { state -> Int? in
            guard var controller = state.controller else { return nil }
            controller.update(fractionLost: stats.reportedLoss, estimate: stats.estimateKbps)
            state.controller = controller
            return controller.kbps
        }
        if let rate, stats.connected != 0, rate != session.videoKbps { session.videoKbps = rate }
        var counters = ["videoPackets": String(stats.video_packets_sent), "audioPackets": String(stats.audio_packets_sent),
                        "connected": stats.connected != 0 ? "yes" : "no"]
        if let loss = stats.reportedLoss { counters["lossPercent"] = String(Int((loss * 100).rounded())) }
        if let estimate = stats.estimateKbps { counters["serverEstimateKbps"] = String(estimate) }
        noteInfo(counters)
    }

    /// Service info for the host app and `replay broadcast status`: the room, the phase, the rate.
    private func noteInfo(_ counters: [String: String] = [:]) {
        guard let settings else { return }
        let send = broadcast.state.withLock { state -> [String: String]? in
            var info = counters
            info["room"] = settings.room.description
            info["janus"] = state.phase
            info["joins"] = String(state.joins)
            if let participant = state.participant { info["participant"] = String(participant) }
            if let rate = state.controller?.kbps { info["videoKbps"] = String(rate) }
            return state.infoFilter.admits(info) ? info : nil
        }
        if let send { updateServiceInfo(send) }
    }

    private func fail(_ message: String) {
        if broadcast.failsFirst() { finishBroadcast(error: message) }
    }
}

BroadcastExtension.run(VideoRoomHandler())
