import ReplayCodec
import ReplayProcessing
import ReplayMedia
import ReplayUpload
import Testing

@Suite struct UploadSettingsTests {
    @Test func rtmpJoinsTheKeyToTheURLButNeverShowsIt() throws {
        let settings = try UploadSettings(service: .rtmp, setup: ["url": "rtmp://live.example.com/app/", "key": "abc-123"])
        #expect(settings.target.muxer == "flv")
        #expect(settings.target.url == "rtmp://live.example.com/app/abc-123")
        #expect(settings.target.displayURL == "rtmp://live.example.com/app")
        #expect(!settings.target.displayURL.contains("abc-123"))
        // The defaults: video mode (fits 1280) at 30 fps, 2500 kbit/s, retried for 60 s.
        #expect(settings.video.mode == .video && settings.video.format == .fit(maxDimension: 1280))
        #expect(settings.fps == 30 && settings.videoBitRate == 2_500_000 && settings.reconnectTimeout == 60 && settings.reconnects)
    }

    @Test func screencastModeKeepsTheNativeSize() throws {
        let settings = try UploadSettings(service: .srt, setup: ["url": "srt://10.0.0.1:9000?latency=200000", "mode": "screencast",
                                                                  "fps": "15", "bitrate": "800"])
        #expect(settings.video.format == .native && settings.fps == 15 && settings.videoBitRate == 800_000)
        #expect(settings.target.muxer == "mpegts")
        #expect(settings.target.url == "srt://10.0.0.1:9000?latency=200000&mode=caller")
        #expect(settings.target.displayURL == "srt://10.0.0.1:9000")
    }

    /// SRT's passphrase and stream id are secret settings of their own, joined to the URL only
    /// inside the extension, escaped, and never shown.
    @Test func srtTakesItsPassphraseAndStreamIDAsSecretsNeverInTheURL() throws {
        let settings = try UploadSettings(service: .srt, setup: ["url": "srt://10.0.0.1:9000", "passphrase": "hunter22 & more",
                                                                  "streamid": "#!::r=live/cam,m=publish"])
        #expect(settings.target.url == "srt://10.0.0.1:9000?mode=caller&passphrase=hunter22%20%26%20more&streamid=%23%21%3A%3Ar%3Dlive%2Fcam%2Cm%3Dpublish")
        #expect(settings.target.displayURL == "srt://10.0.0.1:9000")
        for url in ["srt://10.0.0.1:9000?passphrase=hunter22hunter22", "srt://10.0.0.1:9000?mode=caller&StreamID=secret"] {
            #expect(throws: UploadSettings.Problem.self) { try UploadSettings(service: .srt, setup: ["url": url]) }
        }
        do {
            _ = try UploadSettings(service: .srt, setup: ["url": "srt://10.0.0.1:9000", "passphrase": "short"])
            Issue.record("a 5-character passphrase was accepted")
        } catch {
            #expect(error.description == "passphrase must be 10 to 79 characters long")
        }
    }

    /// A stream key in the RTMP URL's path (or its query) is refused: the key is a setting of its own.
    @Test func rtmpRefusesAKeyInsideItsURL() {
        for url in ["rtmp://live.example.com/app/sk-123", "rtmp://live.example.com/app?key=sk-123", "rtmp://user:pw@live.example.com/app"] {
            do {
                _ = try UploadSettings(service: .rtmp, setup: ["url": url, "key": "k"])
                Issue.record("accepted \(url)")
            } catch {
                #expect(error.description.contains("secret setting 'key'") && error.description.contains("change"), "\(error)")
            }
        }
    }

    @Test func hlsWritesIntoAnExistingDirectoryAndNeverReconnects() throws {
        let settings = try UploadSettings(service: .hls, setup: ["dir": "/tmp"])
        #expect(settings.target.muxer == "hls" && settings.target.url == "/tmp/stream.m3u8" && !settings.reconnects)
        #expect(settings.target.options["hls_segment_filename"] == "/tmp/segment-%05d.ts")
    }

    @Test(arguments: [
        (UploadService.rtmp, ["url": "http://example.com", "key": "k"], "url must be an RTMP server address"),
        (.rtmp, ["url": "rtmp://example.com/app"], "key (the stream key) is missing"),
        (.rtmp, ["url": "rtmp://example.com/app", "key": "a/b"], "cannot contain '/'"),
        (.rtmp, ["url": "rtmp://example.com/app", "key": "k", "bitrate": "lots"], "bitrate must be a number of kbit/s from 100 to 50000"),
        (.rtmp, ["url": "rtmp://example.com/app", "key": "k", "fps": "60"], "fps must be a number of frames per second from 1 to 30"),
        (.rtmp, ["url": "rtmp://example.com/app", "key": "k", "mode": "film"], "mode must be 'video' or 'screencast'"),
        (.srt, ["url": "udp://example.com:9000"], "url must be an SRT listener address"),
        (.hls, ["dir": "relative/path"], "dir must be an absolute path"),
        (.hls, ["dir": "/nonexistent-directory-for-test"], "is not a directory"),
    ])
    func badSetupIsASentenceThePersonCanActOn(service: UploadService, setup: [String: String], expected: String) {
        do {
            _ = try UploadSettings(service: service, setup: setup)
            Issue.record("accepted \(setup)")
        } catch {
            #expect(error.description.contains(expected), "\(error)")
        }
    }

    @Test func presetsKeepX264InsideTheMemoryLimit() {
        #expect(LiveFormat.preset(width: 1280, height: 720) == "veryfast")
        #expect(LiveFormat.preset(width: 1920, height: 1080) == "ultrafast")
        #expect(LiveFormat(width: 886, height: 498, picture: .bt601VideoRange, fps: 15, videoBitRate: 1_000_000).preset == "veryfast")
    }
}
