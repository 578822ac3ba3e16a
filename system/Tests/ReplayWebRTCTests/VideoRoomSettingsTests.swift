import FoundationEssentials
import ReplayProcessing
import ReplayWebRTC
import Testing
@testable import replay_videoroom_extension

/// The `videoroom` extension's setup: a Janus server, a room, who joins, and the room's
/// secrets kept out of addresses.
@Suite struct VideoRoomSettingsTests {
    @Test func aRoomOnAServerWithDefaultsAndTheSecretsOnlyInTheJoin() throws {
        let settings = try VideoRoomSettings(setup: ["url": "http://127.0.0.1:8088", "room": "1234", "pin": "s3cret", "token": "t0k"])
        #expect(settings.server.absoluteString == "http://127.0.0.1:8088/janus")
        #expect(settings.room == .number(1234) && settings.display == "Screen" && settings.reconnectTimeout == 60)
        #expect(settings.mode == .video && settings.maxKbps == 2500)
        let join = settings.joinRequest
        #expect(join["request"] == "join" && join["ptype"] == "publisher")
        #expect(join["room"] == .integer(1234) && join["pin"] == "s3cret" && join["token"] == "t0k")

        let named = try VideoRoomSettings(setup: ["url": "https://call.example.com/janus", "room": "standup", "display": "Ana's screen",
                                                  "mode": "screencast", "reconnect-timeout": "5"])
        #expect(named.room == .name("standup") && named.joinRequest["room"] == "standup")
        #expect(named.joinRequest["pin"] == nil && named.display == "Ana's screen" && named.reconnectTimeout == 5)
        #expect(named.server.absoluteString == "https://call.example.com/janus" && named.format == .fit(maxDimension: 1280))
    }

    @Test(arguments: [
        ([:], "url is required"),
        (["url": "ws://127.0.0.1:8188", "room": "1"], "url must be the Janus server's http:// or https:// address"),
        (["url": "http://user:pw@127.0.0.1:8088/janus", "room": "1"], "url must not carry credentials"),
        (["url": "http://127.0.0.1:8088/janus?pin=1", "room": "1"], "url must not carry credentials"),
        (["url": "http://127.0.0.1:8088/janus"], "room is required"),
        (["url": "http://127.0.0.1:8088/janus", "room": "1", "display": String(repeating: "a", count: 101)], "display must be one line"),
        (["url": "http://127.0.0.1:8088/janus", "room": "1", "reconnect-timeout": "0"], "reconnect-timeout must be 1 to 3600"),
        (["url": "http://127.0.0.1:8088/janus", "room": "1", "bitrate": "10"], "bitrate must be kbit/s"),
    ])
    func badSetupIsRefusedWithASentence(setup: [String: String], expected: String) {
        do {
            _ = try VideoRoomSettings(setup: setup)
            Issue.record("accepted \(setup)")
        } catch {
            #expect("\(error)".contains(expected), "\(error)")
        }
    }

    /// Only a refusal no retry can mend ends the broadcast at once; a lost session or an
    /// unreachable server is rejoined.
    @Test func onlyTheRoomsOwnRefusalsArePermanent() {
        #expect(JanusClient.Failure.refused(code: 433, reason: "Unauthorized").isPermanent)
        #expect(JanusClient.Failure.refused(code: 426, reason: "No such room").isPermanent)
        #expect(!JanusClient.Failure.sessionLost(reason: "No such session (error 458)").isPermanent)
        #expect(!JanusClient.Failure.unreachable(server: "http://127.0.0.1:1/janus", reason: "refused").isPermanent)
    }
}
