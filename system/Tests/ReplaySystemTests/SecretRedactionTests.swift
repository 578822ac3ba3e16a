import ReplaySystem
import Testing

/// What an extension's libraries print passes through one redaction before replayd logs it.
@Suite struct SecretRedactionTests {
    /// FFmpeg's own line when an SRT caller fails (issue 46): both secrets, percent-encoded as
    /// the URL carries them, and nothing else of the line lost.
    @Test func ffmpegsSRTFailureLineLosesThePassphraseAndStreamID() {
        let passphrase = "pp 7f3a/c0ffee!", streamID = "#!::r=live/cam,m=publish"
        let redaction = SecretRedaction(secrets: [passphrase, streamID])
        let line = "[srt @ 0x55d2] Connection to srt://127.0.0.1:9002?mode=caller&passphrase=pp%207f3a%2Fc0ffee%21"
            + "&streamid=%23%21%3A%3Ar%3Dlive%2Fcam%2Cm%3Dpublish failed: Connection setup failure: connection timed out"
        let shown = redaction.redact(line)
        #expect(!shown.contains("7f3a") && !shown.contains("c0ffee") && !shown.contains("live%2Fcam"), "\(shown)")
        #expect(shown == "[srt @ 0x55d2] Connection to srt://127.0.0.1:9002?mode=caller&passphrase=[redacted]"
            + "&streamid=[redacted] failed: Connection setup failure: connection timed out")
    }

    @Test func aSecretIsHiddenAsItIsWhereverItStands() {
        let redaction = SecretRedaction(secrets: ["sk-live-123456"])
        #expect(redaction.redact("publishing with key sk-live-123456 now") == "publishing with key [redacted] now")
        #expect(redaction.redact("nothing secret here") == "nothing secret here")
    }

    /// No secret given: the patterns alone still catch what URLs and option lists carry.
    @Test(arguments: [
        ("rtmp://live.example.com/app/sk-abc123 refused", "rtmp://live.example.com/app/[redacted] refused"),
        ("rtmps://a.rtmp.youtube.com:443/live2/xxxx-yyyy-zzzz", "rtmps://a.rtmp.youtube.com:443/live2/[redacted]"),
        ("https://bob:hunter22@ingest.example.com/whip", "https://bob:[redacted]@ingest.example.com/whip"),
        ("srt://h:9000?streamid=abc&latency=200", "srt://h:9000?streamid=[redacted]&latency=200"),
        ("https://h/x?Token=t0k3n&a=1", "https://h/x?Token=[redacted]&a=1"),
        ("options: passphrase=0123456789ab pbkeylen=16", "options: passphrase=[redacted] pbkeylen=16"),
    ])
    func thePatternsCatchSecretsNobodyNamed(line: String, shown: String) {
        #expect(SecretRedaction.patternsOnly.redact(line) == shown)
    }

    /// What is not a secret stays as it is: a server's address, a monkey, an application name.
    @Test(arguments: [
        "rtmp://127.0.0.1:1935/live",
        "connecting to srt://127.0.0.1:9002?mode=caller&latency=120",
        "monkey=3 turkey=4",
        "[flv @ 0x1] Failed to update header with correct duration.",
    ])
    func whatIsNoSecretIsLeftAlone(line: String) {
        #expect(SecretRedaction(secrets: ["abc"]).redact(line) == line)
    }

    @Test func aShortValueIsLeftToThePatterns() {
        // Three characters would hide every "abc" in every line: only the patterns apply.
        let redaction = SecretRedaction(secrets: ["abc"])
        #expect(redaction.redact("abcdef") == "abcdef")
        #expect(redaction.redact("srt://h:1?passphrase=abc") == "srt://h:1?passphrase=[redacted]")
    }
}
