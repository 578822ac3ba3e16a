import CWebRTC
import Dispatch
import FoundationEssentials
import ReplayExtensionKit
import ReplayMedia
import ReplayProcessing
import ReplaySystem
import ReplayWebRTC
import Synchronization

/// The `webrtc` upload extension: publishes the broadcast as a send-only WebRTC session to a
/// WHIP endpoint (RFC 9725), and/or serves it to local viewers over WHEP with a page on
/// loopback. H.264 constrained baseline (packetization mode 1) and Opus through GStreamer's
/// webrtcbin (ICE by libnice, DTLS-SRTP, NACK/RTX); a keyframe when a receiver sends PLI/FIR
/// or a viewer joins; the video bitrate follows the receivers' loss reports.
final class WebRTCUploadHandler: BroadcastSampleHandler, @unchecked Sendable {
    // @unchecked: what the other threads share is immutable once started or behind `state`.
    private var settings: WebRTCSettings?
    private var viewerServer: ViewerServer?
    private var whip: WHIPClient?
    private let broadcast = WebRTCBroadcast<SharedState>(label: "webrtc-stats")
    private var session: WebRTCSession? { broadcast.session }

    struct SharedState: WebRTCBroadcastState {
        var finished = false
        var failed = false
        var whipPeer: Int32?
        var whipResource: URL?
        var controllers: [Int32: BitrateController] = [:]
        var infoFilter = ServiceInfoFilter()
    }

    override func broadcastStarted(setupInfo: [String: String]) {
        let settings: WebRTCSettings
        let session: WebRTCSession
        do {
            settings = try WebRTCSettings(setup: setupInfo)
            session = try broadcast.start(video: settings.video,
                                          peerChanged: { [weak self] peer, state in self?.peerChanged(peer, state) },
                                          peerFailed: { [weak self] peer, message in self?.peerFailed(peer, message) })
        } catch {
            fail("\(error)")
            return
        }
        self.settings = settings

        if let port = settings.viewerPort {
            let server = ViewerServer(session: session, joined: { [weak self] peer in self?.viewerJoined(peer) },
                                      left: { [weak self] peer in self?.peerLeft(peer) })
            do {
                updateBroadcastURL(try server.start(port: port))
                viewerServer = server
            } catch {
                fail("\(error)")
                return
            }
        }
        if let endpoint = settings.whipURL {
            let client = WHIPClient(endpoint: endpoint, token: settings.token)
            whip = client
            Threads.detach { [self] in publish(client, session: session) }
        }
        broadcast.tick { [weak self] in self?.adaptBitrate() }
    }

    override func processSampleBuffer(_ sample: SampleBuffer) {
        broadcast.feed(sample)
    }

    override func broadcastFinished() {
        let resource = broadcast.state.withLock { state -> URL? in
            state.finished = true
            return state.whipResource
        }
        broadcast.stopTicks()
        if let whip, let resource {
            whip.end(resource)
        }
        viewerServer?.stop()
        broadcast.close()
    }

    // MARK: WHIP

    private func publish(_ client: WHIPClient, session: WebRTCSession) {
        do {
            let (peer, offer) = try session.offer()
            broadcast.state.withLock { $0.whipPeer = peer; $0.controllers[peer] = controller() }
            let (answer, resource) = try client.publish(offer: offer)
            let finished = broadcast.state.withLock { state -> Bool in
                state.whipResource = resource
                return state.finished
            }
            if finished {
                client.end(resource)
                return
            }
            try session.setAnswer(answer, peer: peer)
            if settings?.viewerPort == nil { updateBroadcastURL(client.displayEndpoint) }
            noteInfo()
        } catch {
            fail("\(error)")
        }
    }

    // MARK: peers

    private func controller() -> BitrateController {
        settings?.video.controller() ?? BitrateController(start: 1500, minimum: 150, maximum: 2500)
    }

    private func viewerJoined(_ peer: Int32) {
        broadcast.state.withLock { $0.controllers[peer] = controller() }
        session?.requestKeyframe()
        noteInfo()
    }

    private func peerLeft(_ peer: Int32) {
        _ = broadcast.state.withLock { $0.controllers.removeValue(forKey: peer) }
        noteInfo()
    }

    private func peerChanged(_ peer: Int32, _ connection: WebRTCSession.PeerState) {
        guard connection == .failed || connection == .closed else { return }
        if broadcast.state.withLock({ $0.whipPeer == peer }) {
            if connection == .failed { fail("the WebRTC connection to the WHIP endpoint failed (ICE or DTLS)") }
        } else if let viewerServer {
            // Off GStreamer's thread: taking a peer down waits for its streaming threads.
            DispatchQueue.global().async { viewerServer.remove(peer) }
        }
    }

    private func peerFailed(_ peer: Int32, _ message: String) {
        if peer == 0 || broadcast.state.withLock({ $0.whipPeer == peer }) {
            fail("WebRTC: \(message)")
        } else if let viewerServer {
            DispatchQueue.global().async { viewerServer.remove(peer) }
        }
    }

    // MARK: congestion feedback

    /// Once a second: each peer's loss (RTCP receiver reports) moves its controller; the
    /// shared encoder runs at the lowest rate any receiver can take.
    private func adaptBitrate() {
        guard let session else { return }
        let peers = broadcast.state.withLock { Array($0.controllers.keys) }
        var rates: [Int] = []
        var connected = 0
        var videoPackets: UInt64 = 0, audioPackets: UInt64 = 0, keyframeRequests: UInt64 = 0, nacks: UInt64 = 0
        var worstLoss: Double?, worstRoundTrip: Double?
        for peer in peers {
            guard let stats = session.stats(peer: peer) else { continue }
            if stats.connected != 0 { connected += 1 }
            videoPackets += stats.video_packets_sent
            audioPackets += stats.audio_packets_sent
            keyframeRequests += stats.pli_received + stats.fir_received
            nacks += stats.nack_received
            if stats.have_report != 0 {
                worstLoss = max(worstLoss ?? 0, stats.fraction_lost)
                worstRoundTrip = max(worstRoundTrip ?? 0, stats.round_trip_time)
            }
            let rate = broadcast.state.withLock { state -> Int? in
                guard var controller = state.controllers[peer] else { return nil }
                controller.update(fractionLost: stats.reportedLoss, estimate: stats.estimateKbps)
                state.controllers[peer] = controller
                return controller.kbps
            }
            if let rate, stats.connected != 0 { rates.append(rate) }
        }
        if let lowest = rates.min(), lowest != session.videoKbps { session.videoKbps = lowest }
        noteInfo(connected: connected, counters: ["videoPackets": videoPackets, "audioPackets": audioPackets,
                                                  "keyframeRequests": keyframeRequests, "nacks": nacks]
                    .merging(worstLoss.map { ["lossPercent": UInt64(($0 * 100).rounded())] } ?? [:]) { $1 }
                    .merging(worstRoundTrip.map { ["roundTripMs": UInt64(($0 * 1000).rounded())] } ?? [:]) { $1 })
    }

    /// Service info for the host app and `replay broadcast status`: viewers, WHIP, bitrate.
    private func noteInfo(connected: Int? = nil, counters: [String: UInt64] = [:]) {
        guard let session else { return }
        var info = ["videoKbps": String(session.videoKbps)]
        for (key, value) in counters { info[key] = String(value) }
        if let viewerServer { info["viewers"] = String(viewerServer.viewerCount) }
        if let connected { info["connectedPeers"] = String(connected) }
        let whipState = broadcast.state.withLock { $0.whipResource != nil ? "published" : ($0.whipPeer != nil ? "offering" : nil) }
        if let whipState { info["whip"] = whipState }
        if broadcast.state.withLock({ $0.infoFilter.admits(info) }) { updateServiceInfo(info) }
    }

    private func fail(_ message: String) {
        if broadcast.failsFirst() { finishBroadcast(error: message) }
    }
}

BroadcastExtension.run(WebRTCUploadHandler())
