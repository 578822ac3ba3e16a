import FoundationEssentials
import ReplayWebRTC

/// What the person set up (see webrtc.json), checked before anything starts: where to
/// publish, plus the video keys every WebRTC extension shares (`video`).
@dynamicMemberLookup
struct WebRTCSettings: Sendable {
    typealias Invalid = WebRTCVideoSetup.Invalid

    /// The viewer page's port when neither it nor a WHIP endpoint is given.
    static let defaultViewerPort = 8189

    var whipURL: URL?
    var token: String?
    /// nil: no local viewers; 0: any free port.
    var viewerPort: Int?
    var video: WebRTCVideoSetup

    subscript<Value>(dynamicMember keyPath: KeyPath<WebRTCVideoSetup, Value>) -> Value { video[keyPath: keyPath] }

    init(setup: [String: String]) throws {
        let value = { (key: String) in WebRTCVideoSetup.value(key, in: setup) }
        if let text = value("whip-url") {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                throw Invalid("whip-url must be an http:// or https:// address, not \(text)")
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
                throw Invalid("viewer-port must be a port number, auto or 0 (no viewer page), not \(text)")
            }
            viewerPort = port
        }
        guard whipURL != nil || viewerPort != nil else {
            throw Invalid("nothing to publish to: give whip-url, or a viewer-port for local viewers")
        }
        video = try WebRTCVideoSetup(setup: setup)
    }
}
