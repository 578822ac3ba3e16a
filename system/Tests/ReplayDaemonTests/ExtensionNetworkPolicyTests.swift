import ReplayCaptureModel
@testable import ReplayDaemon
import Testing

/// The ports an extension may connect to come from the URLs in its setup, and only from them.
@Suite struct ExtensionNetworkPolicyTests {
    @Test(arguments: [
        ("rtmp://live.example.com/app", [UInt16(1935)]),
        ("rtmps://live.example.com/app", [443]),
        ("rtmp://127.0.0.1:19350/live", [19350]),
        ("https://whip.example.com/whip/room", [443]),
        ("http://127.0.0.1:8080/whip", [8080]),
        ("HTTP://Example.com/", [80]),
        ("ws://example.com/socket", [80]),
        ("wss://example.com/socket", [443]),
        ("custom://example.com:7000/x", [7000]),
    ])
    func aURLNamesItsPortOrItsSchemesDefault(url: String, ports: [UInt16]) {
        #expect(ExtensionNetworkPolicy(setup: ["url": url]).connectPorts == ports)
    }

    /// UDP needs no TCP port; numbers, paths, words and hostless URLs name none.
    @Test(arguments: ["srt://127.0.0.1:9000", "udp://239.0.0.1:5000", "2500", "/home/me/hls", "screencast",
                      "stun.example.com:3478", "file:///tmp/x", "custom://example.com/x", "rtmp://host:0/app", ""])
    func settingsThatAreNoTCPServerNameNoPort(value: String) {
        #expect(ExtensionNetworkPolicy(setup: ["value": value]).connectPorts == [])
    }

    @Test func everyServerOfTheSetupCountsOnce() {
        let setup = ["url": "rtmp://a.example.com/app", "backup": "rtmp://b.example.com/app", "watch-url": "https://example.com/watch",
                     "mode": "video"]
        #expect(ExtensionNetworkPolicy(setup: setup).connectPorts == [443, 1935])
    }

    /// A pipeline (the gst extension's setup) names its servers as words: each one's port
    /// counts, with a placeholder or quotes in the path; a file or a word names none.
    @Test func theServersNamedInsideAPipelineCount() {
        let pipeline = "x264enc ! flvmux name=mux ! rtmp2sink location=rtmp://127.0.0.1:19350/live/{key} audio. ! voaacenc ! mux."
        #expect(ExtensionNetworkPolicy(setup: ["pipeline": pipeline]).connectPorts == [19350])
        let tee = "x264enc ! tee name=t ! queue ! flvmux ! rtmp2sink location=\"rtmps://a.example.com/app/x y\" t. ! queue ! mpegtsmux ! srtsink uri=srt://127.0.0.1:9000?mode=caller"
        let policy = ExtensionNetworkPolicy(setup: ["pipeline": tee])
        #expect(policy.connectPorts == [443] && policy.udpPorts == [9000], "\(policy)")
        #expect(ExtensionNetworkPolicy(setup: ["pipeline": "x264enc ! mp4mux ! filesink location=/out/a.mp4"]).connectPorts == [])
    }

    /// pasta forwards to the host's loopback the TCP ports, and the UDP ports SRT and UDP URLs
    /// name; nothing into the sandbox.
    @Test func pastaForwardsOnlyTheSetupsPortsToTheHost() {
        let policy = ExtensionNetworkPolicy(setup: ["url": "rtmp://127.0.0.1:19350/live", "srt": "srt://127.0.0.1:9000", "mode": "video"])
        #expect(policy.udpPorts == [9000])
        let arguments = SandboxNetwork.arguments(policy: policy).joined(separator: " ")
        #expect(arguments.contains("-t none -u none -T 19350 -U 9000"), "\(arguments)")
        let none = SandboxNetwork.arguments(policy: ExtensionNetworkPolicy(setup: [:])).joined(separator: " ")
        #expect(none.contains("-T none -U none"), "\(none)")
    }
}
