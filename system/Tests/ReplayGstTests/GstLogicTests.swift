import Testing
@testable import replay_gst_extension

/// A parser that makes no GStreamer elements: it keeps the description it was handed and
/// answers with the elements the test says GStreamer would have made.
struct FakePipeline: GstParsedPipeline {
    let description: String
    let elements: [GstParsedElement]
}

/// The gst extension's setup: the tail, the secret, the folder, the sizes.
@Suite struct GstSettingsTests {
    @Test func aTailWithDefaults() throws {
        let settings = try GstSettings(setup: ["pipeline": "  x264enc ! flvmux ! rtmp2sink location=rtmp://h/app/s  "])
        #expect(settings.tail == "x264enc ! flvmux ! rtmp2sink location=rtmp://h/app/s")
        #expect(settings.maxSize == 1280 && settings.fps == 30 && settings.key == nil && settings.directory == nil)
    }

    @Test(arguments: [
        (["pipeline": ""], "pipeline is empty"),
        (["pipeline": "x264enc ! filesink", "fps": "31"], "fps must be a whole number of frames per second from 1 to 30, not '31'"),
        (["pipeline": "x264enc ! filesink", "max-size": "12.5"], "max-size must be a whole number of pixels from 160 to 3840"),
        (["pipeline": "x264enc ! flvmux ! rtmp2sink location=rtmp://h/app/{key}"], "pipeline says {key} but the secret setting 'key' is empty"),
        (["pipeline": "x264enc ! filesink", "key": "a b"], "the key cannot contain spaces"),
        (["pipeline": "x264enc ! filesink", "dir": "relative/folder"], "dir must be an absolute path"),
        (["pipeline": String(repeating: "queue ! ", count: 600) + "filesink"], "at most 4096 are taken"),
    ])
    func aSetupThatCannotWorkIsRefusedWithWhatToDo(setup: [String: String], expected: String) {
        #expect(throws: GstSettings.Problem.self) { try GstSettings(setup: setup) }
        do {
            _ = try GstSettings(setup: setup)
        } catch {
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }

    @Test func theFolderIsNormalisedAndTheNumbersRead() throws {
        let settings = try GstSettings(setup: ["pipeline": "x", "dir": "/srv/./out/", "max-size": "960", "fps": "15", "key": "k3y"])
        #expect(settings.directory == "/srv/out" && settings.maxSize == 960 && settings.fps == 15 && settings.key == "k3y")
    }
}

/// The description GStreamer is handed: the extension's sources, then the tail.
@Suite struct GstPipelineTextTests {
    @Test func picturesFlowIntoTheTailAndNoSoundBranchUnlessItIsLinked() throws {
        let text = GstPipelineText(settings: try GstSettings(setup: ["pipeline": "x264enc ! mp4mux ! filesink location=/out/a.mp4"]))
        #expect(text.description.hasPrefix("appsrc name=replay-video ! queue name=replay-video-queue "))
        #expect(text.description.hasSuffix("! x264enc ! mp4mux ! filesink location=/out/a.mp4"))
        #expect(!text.takesAudio && !text.description.contains("replay-audio"))
        #expect(text.head.map(\.name) == ["replay-video", "replay-video-queue"])
    }

    @Test func aTailThatLinksAudioGetsTheSoundBranchNamedAudio() throws {
        let tail = "x264enc ! flvmux name=mux ! rtmp2sink location=rtmp://h/live/s audio. ! voaacenc ! mux."
        let text = GstPipelineText(settings: try GstSettings(setup: ["pipeline": tail]))
        #expect(text.takesAudio)
        #expect(text.description.contains(" appsrc name=replay-audio ! audioconvert name=replay-audio-convert ! audioresample name=replay-audio-resample ! queue name=audio "))
        #expect(text.head.map(\.name).contains("audio"))
    }

    @Test(arguments: ["x264enc ! filesink location=/out/audio.mp4", "x264enc ! flvmux ! rtmp2sink location=rtmp://audio.example.com/a/b",
                      "x264enc ! filesink location=\"/out/my audio. file\""])
    func aFileOrHostNamedAudioIsNoSoundBranch(tail: String) throws {
        #expect(!GstPipelineText(settings: try GstSettings(setup: ["pipeline": tail])).takesAudio)
    }

    @Test func theSecretGoesIntoTheDescriptionOnlyAndMessagesHideIt() throws {
        let settings = try GstSettings(setup: ["pipeline": "x264enc ! flvmux ! rtmp2sink location=rtmp://h/live/{key}", "key": "s3cr3t-key"])
        let text = GstPipelineText(settings: settings)
        #expect(text.description.contains("location=rtmp://h/live/s3cr3t-key"))
        #expect(!text.shown.contains("s3cr3t-key") && text.shown.contains("{key}"))
        #expect(GstPipelineText.redacting("Could not connect to rtmp://h/live/s3cr3t-key", key: "s3cr3t-key") == "Could not connect to rtmp://h/live/{key}")
    }

    @Test func wordsSplitAsGstLaunchDoesKeepingQuotes() {
        #expect(GstPipelineText.words(of: "a b=1 ! c  d=\"x ! y\"!e") == ["a", "b=1", "c", "d=\"x ! y\"", "e"])
    }
}

/// The allowed list and where each sink may go, over the elements a (fake) parser made.
@Suite struct GstAllowedElementsTests {
    static let head = [GstParsedElement(factory: "appsrc", name: "replay-video"), GstParsedElement(factory: "queue", name: "replay-video-queue")]

    static func check(_ elements: [GstParsedElement], directory: String? = "/out") throws {
        try GstAllowedElements.check(head + elements, head: head, directory: directory)
    }

    @Test func anEncoderMuxerAndSinkOnTheListPass() throws {
        try Self.check([GstParsedElement(factory: "x264enc"), GstParsedElement(factory: "flvmux"),
                        GstParsedElement(factory: "rtmp2sink", properties: ["location": "rtmp://127.0.0.1:1935/live/k"])])
        try Self.check([GstParsedElement(factory: "x264enc"), GstParsedElement(factory: "mpegtsmux", properties: ["alignment": "7"]),
                        GstParsedElement(factory: "srtsink", properties: ["uri": "srt://127.0.0.1:9000"])])
        try Self.check([GstParsedElement(factory: "x264enc"), GstParsedElement(factory: "h264parse"), GstParsedElement(factory: "mp4mux"),
                        GstParsedElement(factory: "filesink", properties: ["location": "/out/a.mp4"])])
        try Self.check([GstParsedElement(factory: "x264enc"),
                        GstParsedElement(factory: "hlssink2", properties: ["location": "/out/seg%05d.ts", "playlist-location": "/out/p.m3u8"])])
    }

    @Test(arguments: [
        ("fdsink", "'fdsink', which the gst extension does not allow"),
        ("filesrc", "'filesrc', which the gst extension does not allow"),
        ("udpsink", "'udpsink', which the gst extension does not allow"),
        ("splitmuxsink", "'splitmuxsink', which the gst extension does not allow"),
        ("bin", "'bin', which the gst extension does not allow"),
        ("appsrc", "'appsrc', which the gst extension does not allow"),
    ])
    func anElementOffTheListIsRefusedByName(factory: String, expected: String) {
        do {
            try Self.check([GstParsedElement(factory: "x264enc"), GstParsedElement(factory: factory, name: "x"),
                            GstParsedElement(factory: "filesink", properties: ["location": "/out/a"])])
            Issue.record("\(factory) passed")
        } catch {
            #expect("\(error)".contains(expected) && "\(error)".contains("Allowed: encoders:"), "\(error)")
        }
    }

    @Test(arguments: [
        ("/etc/cron.d/x", "filesink's location is '/etc/cron.d/x': it must be a file inside /out"),
        ("/out/../etc/x", "it must be a file inside /out"),
        ("/outside/x", "it must be a file inside /out"),
        ("/out", "it must be a file inside /out"),
        ("relative.mp4", "it must be a file inside /out"),
        ("", "filesink's location is not set"),
    ])
    func aFilesinkOutsideTheFolderIsRefused(location: String, expected: String) {
        do {
            try Self.check([GstParsedElement(factory: "x264enc"), GstParsedElement(factory: "filesink", properties: ["location": location])])
            Issue.record("\(location) passed")
        } catch {
            #expect("\(error)".contains(expected), "\(error)")
        }
    }

    @Test func aFilesinkWithoutAFolderIsRefused() {
        #expect(throws: GstAllowedElements.Refusal(description: "filesink writes files, and only in the folder of the setting 'dir', which is empty")) {
            try Self.check([GstParsedElement(factory: "filesink", properties: ["location": "/out/a"])], directory: nil)
        }
    }

    @Test(arguments: [
        (GstParsedElement(factory: "rtmp2sink", properties: ["location": "http://h/x"]), "rtmp2sink needs location=rtmp://"),
        (GstParsedElement(factory: "srtsink", properties: [:]), "srtsink needs uri=srt://"),
        (GstParsedElement(factory: "hlssink2", properties: ["location": "/out/s%d.ts", "playlist-location": "playlist.m3u8"]),
         "hlssink2's playlist-location is 'playlist.m3u8'"),
        (GstParsedElement(factory: "x264enc", properties: ["option-string": "dump-yuv=/tmp/x"]), "x264enc's option-string is not allowed"),
        (GstParsedElement(factory: "x264enc", properties: ["pass": "pass1"]), "multipass modes write a statistics file"),
        (GstParsedElement(factory: "vp8enc", properties: ["multipass-mode": "first-pass"]), "multipass modes write a statistics file"),
        (GstParsedElement(factory: "mp4mux", properties: ["moov-recovery-file": "/etc/x"]), "moov-recovery-file must be inside"),
    ])
    func aSinkOrEncoderThatWouldGoElsewhereIsRefused(element: GstParsedElement, expected: String) {
        do {
            try Self.check([element, GstParsedElement(factory: "filesink", properties: ["location": "/out/a"])])
            Issue.record("\(element) passed")
        } catch {
            #expect("\(error)".contains(expected), "\(error)")
        }
    }

    /// mpegtsmux's default buffers are too large for SRT's live messages: the video was lost
    /// without an error.
    @Test func mpegtsIntoSRTNeedsSevenPacketsAMessage() {
        #expect(throws: GstAllowedElements.Refusal.self) {
            try Self.check([GstParsedElement(factory: "x264enc"), GstParsedElement(factory: "mpegtsmux", properties: ["alignment": "-1"]),
                            GstParsedElement(factory: "srtsink", properties: ["uri": "srt://127.0.0.1:9000"])])
        }
        #expect(throws: Never.self) {
            try Self.check([GstParsedElement(factory: "x264enc"), GstParsedElement(factory: "mpegtsmux", properties: ["alignment": "-1"]),
                            GstParsedElement(factory: "filesink", properties: ["location": "/out/a.ts"])])
        }
    }

    @Test func aPipelineWithoutASinkIsRefused() {
        #expect(throws: GstAllowedElements.Refusal.self) { try Self.check([GstParsedElement(factory: "x264enc")]) }
    }

    @Test func theTextMayNotReachIntoChildrenNorTakeTheExtensionsNames() {
        #expect(throws: GstAllowedElements.Refusal.self) { try GstAllowedElements.checkText("x264enc ! hlssink2 splitmuxsink0::location=/etc/x") }
        #expect(throws: GstAllowedElements.Refusal.self) { try GstAllowedElements.checkText("x264enc ! queue name=audio ! filesink") }
        #expect(throws: GstAllowedElements.Refusal.self) { try GstAllowedElements.checkText("x264enc ! queue name=\"replay-video\" ! filesink") }
        #expect(throws: Never.self) { try GstAllowedElements.checkText("x264enc ! queue name=audiomux ! filesink location=/o/audio.mp4") }
        #expect(throws: Never.self) { try GstAllowedElements.checkText("x264enc ! mpegtsmux alignment=7 ! srtsink uri=srt://[::1]:9000") }
    }
}

/// The whole plan with a fake parser: what reaches the parser, and how its answer is judged.
@Suite struct GstPlanTests {
    @Test func theParserGetsTheBuiltDescriptionAndTheElementsAreChecked() throws {
        var handed: String?
        let plan = try GstPlan(setup: ["pipeline": "x264enc ! mp4mux ! filesink location=/out/a.mp4", "dir": "/out"]) { (text: String) throws(GstPipeline.Failure) in
            handed = text
            return FakePipeline(description: text, elements: GstAllowedElementsTests.head + [
                GstParsedElement(factory: "x264enc"), GstParsedElement(factory: "mp4mux"),
                GstParsedElement(factory: "filesink", properties: ["location": "/out/a.mp4"])])
        }
        #expect(handed == plan.text.description && plan.pipeline.description == handed)
    }

    @Test func anElementTheParserMadeThatIsNotAllowedStopsThePlan() {
        do {
            _ = try GstPlan(setup: ["pipeline": "x264enc ! flvmux ! fdsink fd=3"]) { (text: String) throws(GstPipeline.Failure) in
                FakePipeline(description: text, elements: GstAllowedElementsTests.head + [
                    GstParsedElement(factory: "x264enc"), GstParsedElement(factory: "flvmux"), GstParsedElement(factory: "fdsink")])
            }
            Issue.record("fdsink passed")
        } catch {
            #expect(error.description.contains("'fdsink', which the gst extension does not allow"), "\(error)")
        }
    }

    @Test func parseFailuresAreExplained() {
        #expect(GstPlan<FakePipeline>.explain(GstPipeline.Failure(description: "no element \"fdsink\"", missing: ["fdsink"]), key: nil)
            .hasPrefix("the pipeline holds 'fdsink', which the gst extension does not allow"))
        #expect(GstPlan<FakePipeline>.explain(GstPipeline.Failure(description: "no element \"x265enc\"", missing: ["x265enc"]), key: nil)
            == "GStreamer has no element 'x265enc' on this machine: install the plugin package that has it")
        #expect(GstPlan<FakePipeline>.explain(GstPipeline.Failure(description: "syntax error near rtmp://h/k3y"), key: "k3y")
            == "the pipeline is malformed: syntax error near rtmp://h/{key}")
    }
}
