package import CWebRTC
import FoundationEssentials
package import ReplayMedia
import ReplayProcessing

/// The Swift face of CWebRTC: one encoder pipeline and its peers. Every method may be called
/// from any thread; `offer`, `answer` and `stats` block (up to their timeout), so call them
/// off the broadcast's callback thread.
package final class WebRTCSession: @unchecked Sendable {
    // @unchecked: `pointer` is immutable and CWebRTC locks internally; `events` is immutable.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package struct Options {
        package var fps = 30
        package var startKbps = 1500
        package var audioBitsPerSecond = 64_000
        package var keyframeSeconds = 2
        package var stunServer: String?

        package init(fps: Int = 30, startKbps: Int = 1500, stunServer: String? = nil) {
            self.fps = fps
            self.startKbps = startKbps
            self.stunServer = stunServer
        }
    }

    /// What GStreamer's threads report; set once, before the session exists.
    package final class Events: @unchecked Sendable {
        // @unchecked: both closures are set in `init` and never change.
        let state: @Sendable (Int32, PeerState) -> Void
        let error: @Sendable (Int32, String) -> Void

        package init(state: @escaping @Sendable (Int32, PeerState) -> Void, error: @escaping @Sendable (Int32, String) -> Void) {
            self.state = state
            self.error = error
        }
    }

    package enum PeerState: Int32, Sendable {
        case new = 0, connecting, connected, disconnected, failed, closed
    }

    private let pointer: OpaquePointer
    private let events: Events

    /// Loads GStreamer with only the plugins WebRTC needs (once per process).
    package static func initialize(registryDirectory: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        guard cwebrtc_initialize(registryDirectory, &error) == 0 else { throw Failure(description: take(error) ?? "GStreamer did not start") }
    }

    package init(options: Options, events: Events) throws {
        self.events = events
        let context = Unmanaged.passUnretained(events).toOpaque()
        var error: UnsafeMutablePointer<CChar>?
        let made: OpaquePointer? = (options.stunServer ?? "").withCString { stun in
            var config = CWebRTCConfig()
            config.fps = Int32(options.fps)
            config.video_kbps = Int32(options.startKbps)
            config.audio_bps = Int32(options.audioBitsPerSecond)
            config.keyframe_interval = Int32(options.fps * options.keyframeSeconds)
            config.stun_server = options.stunServer == nil ? nil : stun
            config.context = context
            config.on_state = { context, peer, state in
                guard let context else { return }
                Unmanaged<Events>.fromOpaque(context).takeUnretainedValue().state(peer, PeerState(rawValue: state) ?? .new)
            }
            config.on_error = { context, peer, message in
                guard let context else { return }
                Unmanaged<Events>.fromOpaque(context).takeUnretainedValue().error(peer, message.map { String(cString: $0) } ?? "unknown")
            }
            return cwebrtc_session_new(&config, &error)
        }
        guard let made else { throw Failure(description: Self.take(error) ?? "cannot create the WebRTC pipeline") }
        pointer = made
    }

    /// GStreamer loaded (once per process) and a session for `setup`'s rates, its events sent
    /// to `state` and `error`: what every WebRTC extension does as its broadcast starts.
    package static func start(for setup: WebRTCVideoSetup, state: @escaping @Sendable (Int32, PeerState) -> Void,
                              error: @escaping @Sendable (Int32, String) -> Void) throws -> WebRTCSession {
        try initialize(registryDirectory: FileManager.default.temporaryDirectory.path)
        return try WebRTCSession(options: Options(fps: VideoSource.playbackCap, startKbps: setup.startKbps, stunServer: setup.stunServer),
                                 events: Events(state: state, error: error))
    }

    deinit { cwebrtc_session_free(pointer) }

    /// One picture, used in place: its storage (a daemon surface or a scaled copy) is held
    /// until the encoder has taken it, then let go.
    package func push(_ sample: VideoSample) {
        let pixels = sample.pixels
        let bytes = pixels.bytes
        let held = Unmanaged.passRetained(pixels.storage).toOpaque()
        let bt709: Int32 = pixels.format.matrix == .bt709 ? 1 : 0, fullRange: Int32 = pixels.format.range == .full ? 1 : 0
        _ = cwebrtc_push_video(pointer, pixels.baseAddress.assumingMemoryBound(to: UInt8.self), bytes.count, Int32(pixels.width),
                               Int32(pixels.height), bt709, fullRange, sample.time.nanoseconds, { held in
                                   if let held { Unmanaged<PixelStorage>.fromOpaque(held).release() }
                               }, held)
    }

    /// 48 kHz interleaved stereo.
    package func push(_ audio: AudioBuffer) {
        precondition(audio.sampleRate == 48_000 && audio.channels == 2)
        audio.samples.withUnsafeBufferPointer { samples in
            _ = cwebrtc_push_audio(pointer, samples.baseAddress, Int32(audio.frameCount), audio.time.nanoseconds)
        }
    }

    package func requestKeyframe() { cwebrtc_request_keyframe(pointer) }

    package var videoKbps: Int {
        get { Int(cwebrtc_video_bitrate(pointer)) }
        set { cwebrtc_set_video_bitrate(pointer, Int32(newValue)) }
    }

    /// A send-only peer making the offer (WHIP); the SDP holds every gathered candidate.
    package func offer(timeout: Double = 10) throws -> (peer: Int32, sdp: String) {
        var sdp: UnsafeMutablePointer<CChar>?, error: UnsafeMutablePointer<CChar>?
        let peer = cwebrtc_peer_offer(pointer, Int32(timeout * 1000), &sdp, &error)
        guard peer > 0, let text = Self.take(sdp) else { throw Failure(description: Self.take(error) ?? "no offer") }
        return (peer, text)
    }

    package func setAnswer(_ answer: String, peer: Int32) throws {
        var error: UnsafeMutablePointer<CChar>?
        guard cwebrtc_peer_set_answer(pointer, peer, answer, &error) == 0 else {
            throw Failure(description: Self.take(error) ?? "the answer was not accepted")
        }
    }

    /// A send-only peer answering a viewer's offer (WHEP).
    package func answer(_ offer: String, timeout: Double = 10) throws -> (peer: Int32, sdp: String) {
        var sdp: UnsafeMutablePointer<CChar>?, error: UnsafeMutablePointer<CChar>?
        let peer = cwebrtc_peer_answer(pointer, offer, Int32(timeout * 1000), &sdp, &error)
        guard peer > 0, let text = Self.take(sdp) else { throw Failure(description: Self.take(error) ?? "no answer") }
        return (peer, text)
    }

    package func remove(peer: Int32) { cwebrtc_peer_remove(pointer, peer) }

    package func stats(peer: Int32, timeout: Double = 1) -> CWebRTCPeerStats? {
        var stats = CWebRTCPeerStats()
        return cwebrtc_peer_stats(pointer, peer, Int32(timeout * 1000), &stats) == 0 ? stats : nil
    }

    private static func take(_ string: UnsafeMutablePointer<CChar>?) -> String? {
        guard let string else { return nil }
        defer { cwebrtc_free(string) }
        return String(cString: string)
    }
}
