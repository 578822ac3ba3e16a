import ReplaySystem
import Testing

/// What a URL gives away to whoever sees it.
@Suite struct URLSecretsTests {
    @Test func passwordsAndSecretParametersAreFound() {
        #expect(URLSecrets.carried(by: "srt://ingest.example.com:9000?passphrase=hunter22hunter22&latency=200") == ["passphrase="])
        #expect(URLSecrets.carried(by: "srt://h:1?mode=caller&StreamID=abc") == ["StreamID="])
        #expect(URLSecrets.carried(by: "rtmp://user:pw@live.example.com/app") == ["a password"])
        #expect(URLSecrets.carried(by: "https://example.com/whip?token=t&key=k") == ["token=", "key="])
    }

    @Test func plainURLsAndOtherTextCarryNone() {
        #expect(URLSecrets.carried(by: "rtmp://live.example.com/app").isEmpty)
        #expect(URLSecrets.carried(by: "srt://h:9000?latency=200000&mode=caller").isEmpty)
        #expect(URLSecrets.carried(by: "rtmp://user@live.example.com/app").isEmpty, "a user name alone is no secret")
        #expect(URLSecrets.carried(by: "/tmp/dir?passphrase=x").isEmpty, "not a URL")
        #expect(URLSecrets.carried(by: "https://example.com/path#key=1").isEmpty, "a fragment is not the query")
    }
}
