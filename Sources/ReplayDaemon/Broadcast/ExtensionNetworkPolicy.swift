import Foundation

/// The TCP ports an upload extension may connect to: those of the servers its setup names.
/// Every setting that is a URL with a host names its port, given or the scheme's default
/// (rtmp://host/app: 1935). Landlock allows a port on every address, so `rtmp://127.0.0.1:1935`
/// also opens 1935 on loopback, and nothing else there: not the pages, not another user's
/// service. SRT and UDP URLs name no TCP port; UDP is not limited at all.
public struct ExtensionNetworkPolicy: Equatable, Sendable {
    public let connectPorts: [UInt16]

    static let defaultPorts: [String: UInt16] = ["rtmp": 1935, "rtmps": 443, "http": 80, "https": 443, "ws": 80, "wss": 443]
    static let udpSchemes: Set<String> = ["srt", "udp", "rtp", "rist"]

    public init(setup: [String: String]) {
        let ports = setup.values.compactMap { value -> UInt16? in
            guard let url = URLComponents(string: value.trimmingCharacters(in: .whitespaces)),
                  let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
                  !Self.udpSchemes.contains(scheme) else { return nil }
            if let port = url.port { return port > 0 ? UInt16(exactly: port) : nil }
            return Self.defaultPorts[scheme]
        }
        connectPorts = Set(ports).sorted()
    }
}
