import FoundationEssentials
import Testing
@testable import replay_videoroom_extension

/// Janus's messages as JSON values: its replies read, requests written, ids whole.
@Suite struct JanusJSONTests {
    @Test func aJanusReplyIsReadWithItsIdWholeAndItsPluginData() throws {
        let reply = try JSON(parsing: Array("""
            {"janus":"event","session_id":9007199254740993,"transaction":"t1","sender":12,
             "plugindata":{"plugin":"janus.plugin.videoroom","data":{"videoroom":"joined","id":4,"publishers":[]}},
             "jsep":{"type":"answer","sdp":"v=0\\r\\n"},"ratio":0.5,"ok":true,"none":null}
            """.utf8))
        let event = JanusClient.Event(body: reply)
        #expect(event.kind == "event" && event.transaction == "t1")
        #expect(reply["session_id"]?.integer == 9_007_199_254_740_993)
        #expect(event.pluginData?["videoroom"] == "joined" && event.pluginData?["id"]?.integer == 4)
        #expect(event.pluginData?["publishers"] == .array([]))
        #expect(event.jsep?["sdp"]?.string == "v=0\r\n")
        #expect(reply["ratio"] == .number(0.5) && reply["ok"] == true && reply["none"] == .null)
    }

    @Test func aRequestIsWrittenAsJSONThatReadsBackTheSame() throws {
        let request: JSON = ["janus": "message", "body": ["request": "join", "room": 1234, "display": "Ana's \"screen\""],
                             "transaction": "abc"]
        #expect(String(decoding: request.encoded, as: UTF8.self)
                    == #"{"body":{"display":"Ana's \"screen\"","request":"join","room":1234},"janus":"message","transaction":"abc"}"#)
        #expect(try JSON(parsing: request.encoded) == request)
        #expect(throws: (any Error).self) { try JSON(parsing: Array("not json".utf8)) }
    }
}
