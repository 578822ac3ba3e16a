import Foundation
import ReplayProcessing

/// What the person set up (see webrtc.json), checked before anything starts.
struct WebRTCSettings: Sendable {
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    /// The viewer page's port when neither it nor a WHIP endpoint is given.
    static let defaultViewerPort = 8189

    var whipURL: URL?
    var token: String?
    /// nil: no local viewers; 0: any free port.
    var viewerPort: Int?
    var mode: VideoSource.Mode = .video
    var format: VideoFormatRequest
    var startKbps = 1500
    var minKbps = 150
    var maxKbps = 2500
    var stunServer: String?

    init(setup: [String: String]) throws {
        func value(_ key: String) -> String? {
            guard let text = setup[key]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        if let text = value("whip-url") {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                throw Invalid(description: "whip-url must be an http:// or https:// address, not \(text)")
            }
            whipURL = url
        }
        token = value("token")
        switch value("viewer-port")?.lowercased() {
        case nil: viewerPort = whipURL == nil ? Self.defaultViewerPort : nil
        case "0", "off", "no", "none": viewerPort = nil
        case "auto": viewerPort = 0
        case let text?:
            guard let port = Int(text), (1...65535).contains(port) else {
                throw Invalid(description: "viewer-port must be a port number, auto or 0 (no viewer page), not \(text)")
            }
            viewerPort = port
        }
        guard whipURL != nil || viewerPort != nil else {
            throw Invalid(description: "nothing to publish to: give whip-url, or a viewer-port for local viewers")
        }
        switch value("mode")?.lowercased() {
        case nil, "video": mode = .video
        case "screencast": mode = .screencast
        case let other?: throw Invalid(description: "mode must be video or screencast, not \(other)")
        }
        if let text = value("max-size") {
            guard let box = Int(text), box >= 160 else { throw Invalid(description: "max-size must be at least 160 pixels, not \(text)") }
            format = .fit(maxDimension: box)
        } else {
            // Within the extension's 50 MB, the encoder's pictures must stay modest.
            format = .fit(maxDimension: mode == .screencast ? 1280 : 960)
        }
        if let text = value("max-bitrate") {
            guard let kbps = Int(text), kbps >= minKbps else { throw Invalid(description: "max-bitrate must be kbit/s ≥ \(minKbps), not \(text)") }
            maxKbps = kbps
        }
        if let text = value("bitrate") {
            guard let kbps = Int(text), kbps >= minKbps else { throw Invalid(description: "bitrate must be kbit/s ≥ \(minKbps), not \(text)") }
            startKbps = kbps
            if value("max-bitrate") == nil { maxKbps = max(maxKbps, kbps) }
        }
        startKbps = min(startKbps, maxKbps)
        if let text = value("stun-server") {
            stunServer = text.hasPrefix("stun://") ? text : "stun://\(text)"
        }
    }
}
