import FoundationEssentials
import ReplaySystem
package import ReplayProcessing

/// The setup keys every WebRTC publishing extension shares (`mode`, `max-size`, `bitrate`,
/// `max-bitrate`, `stun-server`), checked before anything starts.
package struct WebRTCVideoSetup: Sendable {
    package struct Invalid: Error, CustomStringConvertible {
        package let description: String

        package init(_ description: String) { self.description = description }
    }

    package var mode: VideoSource.Mode = .video
    package var format: VideoFormatRequest
    package var startKbps = 1500
    package var minKbps = 150
    package var maxKbps = 2500
    package var stunServer: String?

    package init(setup: [String: String]) throws {
        let value = { (key: String) in Self.value(key, in: setup) }
        switch value("mode")?.lowercased() {
        case nil, "video": mode = .video
        case "screencast": mode = .screencast
        case let other?: throw Invalid("mode must be video or screencast, not \(other)")
        }
        if let text = value("max-size") {
            guard let box = Int(text), box >= 160 else { throw Invalid("max-size must be at least 160 pixels, not \(text)") }
            format = .fit(maxDimension: box)
        } else {
            // Within the extension's 50 MB, the encoder's pictures must stay modest.
            format = .fit(maxDimension: mode == .screencast ? 1280 : 960)
        }
        if let text = value("max-bitrate") {
            guard let kbps = Int(text), kbps >= minKbps else { throw Invalid("max-bitrate must be kbit/s ≥ \(minKbps), not \(text)") }
            maxKbps = kbps
        }
        if let text = value("bitrate") {
            guard let kbps = Int(text), kbps >= minKbps else { throw Invalid("bitrate must be kbit/s ≥ \(minKbps), not \(text)") }
            startKbps = kbps
            if value("max-bitrate") == nil { maxKbps = max(maxKbps, kbps) }
        }
        startKbps = min(startKbps, maxKbps)
        if let text = value("stun-server") {
            stunServer = text.hasPrefix("stun://") ? text : "stun://\(text)"
        }
    }

    /// The trimmed value of `key`; nil when absent or blank.
    package static func value(_ key: String, in setup: [String: String]) -> String? {
        guard let text = setup[key]?.trimmingSpaces(), !text.isEmpty else { return nil }
        return text
    }

    /// A bitrate controller for one receiver, within these limits.
    package func controller() -> BitrateController {
        BitrateController(start: startKbps, minimum: minKbps, maximum: maxKbps)
    }
}
