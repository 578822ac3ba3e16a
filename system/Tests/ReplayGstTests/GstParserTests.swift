import Testing
@testable import replay_gst_extension

/// The plan with GStreamer's own parser and only the allowed plugins loaded, as in the
/// extension: what it makes of real tails, before anything plays.
@Suite struct GstParserTests {
    static func plan(_ setup: [String: String]) throws -> GstPlan<GstPipeline> {
        try GstPipeline.initialize(registryDirectory: "/tmp")
        return try GstPlan(setup: setup) { (text: String) throws(GstPipeline.Failure) in try GstPipeline(parsing: text) }
    }

    static func refusal(_ setup: [String: String]) -> String {
        do {
            _ = try plan(setup)
            return "no refusal"
        } catch {
            return "\(error)"
        }
    }

    @Test func aFileTailWithSoundParsesIntoItsElements() throws {
        let plan = try Self.plan(["pipeline": "x264enc tune=zerolatency ! h264parse ! mp4mux name=mux ! filesink location=/out/a.mp4 audio. ! voaacenc ! mux.",
                                  "dir": "/out"])
        #expect(plan.pipeline.takesAudio)
        let factories = plan.pipeline.elements.map(\.factory).sorted()
        #expect(factories == ["appsrc", "appsrc", "audioconvert", "audioresample", "filesink", "h264parse", "mp4mux", "queue", "queue", "voaacenc", "x264enc"],
                "\(factories)")
        #expect(plan.pipeline.elements.first { $0.factory == "filesink" }?.properties["location"] == "/out/a.mp4")
    }

    /// GStreamer builds rtmp2sink's location from its host, port and stream properties: the
    /// check sees the place it will connect to, however it was spelled.
    @Test func rtmpSinkLocationIsReadBackFromTheElement() throws {
        let plan = try Self.plan(["pipeline": "x264enc ! flvmux ! rtmp2sink location=rtmp://127.0.0.1:19350/live/{key}", "key": "k"])
        #expect(plan.pipeline.elements.first { $0.factory == "rtmp2sink" }?.properties["location"] == "rtmp://127.0.0.1:19350/live/k")
        #expect(!plan.pipeline.takesAudio)
    }

    /// The alignment is read back as GStreamer holds it, given or not.
    @Test func mpegtsmuxsAlignmentDecidesWhetherSRTIsTaken() throws {
        #expect(Self.refusal(["pipeline": "x264enc ! mpegtsmux ! srtsink uri=srt://127.0.0.1:9000"]).contains("needs alignment=7"))
        _ = try Self.plan(["pipeline": "x264enc ! mpegtsmux alignment=7 ! srtsink uri=srt://127.0.0.1:9000"])
    }

    @Test(arguments: [
        ("x264enc ! flvmux ! fdsink fd=3", "'fdsink', which the gst extension does not allow"),
        ("x264enc ! flvmux ! tcpclientsink host=127.0.0.1 port=22", "'tcpclientsink', which the gst extension does not allow"),
        ("x264enc ! filesink location=/etc/passwd", "filesink's location is '/etc/passwd': it must be a file inside /out"),
        ("x264enc ! filesink location=file:///etc/passwd", "it must be a file inside /out"),
        ("x264enc ! mp4mux ! filesink location=/out/../etc/x.mp4", "it must be a file inside /out"),
        ("x264enc ! ( queue ! filesink location=/out/a )", "'bin', which the gst extension does not allow"),
        ("x264enc ! flvmux ! rtmp2sink host=127.0.0.1 port=22", "no refusal"),
    ])
    func aHostileTailIsRefusedBeforeAnythingPlays(tail: String, expected: String) {
        let refusal = Self.refusal(["pipeline": tail, "dir": "/out"])
        if expected == "no refusal" {
            // rtmp2sink's host and port make its location rtmp://127.0.0.1:22/…: allowed by the
            // list, and the sandbox's Landlock refuses the connect (the setup names no port 22).
            #expect(refusal == "no refusal", "\(refusal)")
        } else {
            #expect(refusal.contains(expected), "\(refusal)")
        }
    }

    @Test(arguments: ["x264enc ! ! filesink location=/out/a", "x264enc ! flvmux name=mux ! filesink location=/out/a nosuch. ! mux.",
                      "x264enc bogus-property=1 ! filesink location=/out/a", "x264enc key-int-max=many ! filesink location=/out/a"])
    func aMalformedTailIsAClearError(tail: String) {
        let refusal = Self.refusal(["pipeline": tail, "dir": "/out"])
        #expect(refusal.hasPrefix("the pipeline is malformed: "), "\(refusal)")
    }
}
