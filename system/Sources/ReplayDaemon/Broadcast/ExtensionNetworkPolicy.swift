import FoundationEssentials
import ReplaySystem
import ReplayCaptureModel

/// The TCP ports an upload extension may connect to: those of the servers its setup names.
/// Every setting that is (or holds, as a word) a URL with a host names its port, given or the scheme's default
/// (rtmp://host/app: 1935). Landlock allows a port on every address, so `rtmp://127.0.0.1:1935`
/// also opens 1935 on loopback, and nothing else there: not the pages, not another user's
/// service. SRT and UDP URLs name no TCP port but a UDP one (`udpPorts`), which is what pasta
/// forwards to the host's loopback for them (`SandboxNetwork`); Landlock does not limit UDP.
public struct ExtensionNetworkPolicy: Equatable, Sendable {
    public let connectPorts: [UInt16]
    public let udpPorts: [UInt16]

    static let defaultPorts: [String: UInt16] = ["rtmp": 1935, "rtmps": 443, "http": 80, "https": 443, "ws": 80, "wss": 443]
    static let udpSchemes: Set<String> = ["srt", "udp", "rtp", "rist"]

    public init(setup: [String: String]) {
        let urls = setup.values.flatMap(Self.candidates).compactMap { value -> (scheme: String, port: Int?)? in
            guard let url = URLComponents(string: value),
                  let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else { return nil }
            return (scheme, url.port)
        }
        let tcp = urls.filter { !Self.udpSchemes.contains($0.scheme) }.compactMap { url -> UInt16? in
            if let port = url.port { return port > 0 ? UInt16(exactly: port) : nil }
            return Self.defaultPorts[url.scheme]
        }
        let udp = urls.filter { Self.udpSchemes.contains($0.scheme) }.compactMap { $0.port.flatMap { $0 > 0 ? UInt16(exactly: $0) : nil } }
        connectPorts = Set(tcp).sorted()
        udpPorts = Set(udp).sorted()
    }

    /// The URLs a value may hold: the value itself, and each of its words (a pipeline such as
    /// `x264enc ! flvmux ! rtmp2sink location=rtmp://host/app/{key}` names its server in one),
    /// taken after a `name=` and without quotes; each cut after its server, so a path that is no
    /// valid URL (a placeholder, a space in quotes) does not hide the server's port.
    static func candidates(in value: String) -> [String] {
        let trimmed = value.trimmingSpaces()
        let words = trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "!" }).map { word -> String in
            let text = word.drop { $0 != "=" && $0 != ":" }.first == "=" ? String(word.drop { $0 != "=" }.dropFirst()) : String(word)
            return text.filter { $0 != "\"" && $0 != "'" }
        }
        return ([trimmed] + (words.count > 1 || words.first != trimmed ? words : [])).map { candidate in
            guard let scheme = candidate.firstRange(of: "://") else { return candidate }
            let rest = candidate[scheme.upperBound...]
            let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
            return String(candidate[..<end])
        }
    }
}
