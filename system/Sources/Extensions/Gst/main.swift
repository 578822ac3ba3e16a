import Glibc
import ReplayExtensionKit
import ReplayMedia
import Synchronization

/// The `gst` upload extension: the person's GStreamer pipeline tail (an encoder, a muxer and a
/// sink: an RTMP or SRT server, a file, an HLS folder) fed the broadcast's pictures, and its
/// sound where the tail links `audio.`, through appsrc. Only allowed elements, checked before
/// anything plays; only the plugins that hold them are loaded.
final class GstUploadHandler: BroadcastSampleHandler, @unchecked Sendable {
    // @unchecked: `pipeline`, `feed` and `key` are touched on the broadcast's callback thread
    // only; what GStreamer's threads share is behind `ended`.
    private var pipeline: GstPipeline?
    private var feed: GstFeed?
    private var key: String?
    private let ended = Mutex(false)

    /// The time a muxer gets to write its index, and a sink to flush, once the broadcast stops.
    static let finishTimeout = 3.0

    override func broadcastStarted(setupInfo: [String: String]) {
        do throws(GstPipeline.Failure) {
            try GstPipeline.initialize(registryDirectory: getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp")
        } catch {
            fail(error.description)
            return
        }
        let plan: GstPlan<GstPipeline>
        do {
            plan = try GstPlan(setup: setupInfo) { (text: String) throws(GstPipeline.Failure) in try GstPipeline(parsing: text) }
        } catch {
            fail(error.description)
            return
        }
        key = plan.settings.key
        let key = plan.settings.key
        do {
            try plan.pipeline.start(fps: plan.settings.fps, errors: GstPipeline.Errors { [weak self] message in
                self?.fail("the pipeline stopped: " + GstPipelineText.redacting(message, key: key))
            })
        } catch {
            fail(GstPipelineText.redacting(error.description, key: key))
            return
        }
        pipeline = plan.pipeline
        feed = GstFeed(settings: plan.settings, takesAudio: plan.text.takesAudio)
        updateServiceInfo(["audio": plan.text.takesAudio ? "yes" : "no",
                           "elements": String(plan.pipeline.elements.count - plan.text.head.count)])
    }

    override func processSampleBuffer(_ sample: SampleBuffer) {
        guard let pipeline else { return }
        feed?.feed(sample, into: pipeline)
    }

    override func broadcastFinished() {
        let failed = ended.withLock { ended in
            defer { ended = true }
            return ended
        }
        if let pipeline, !failed {
            do throws(GstPipeline.Failure) {
                try pipeline.finish(timeout: Self.finishTimeout)
            } catch {
                printError("gst: the pipeline did not finish cleanly: \(GstPipelineText.redacting(error.description, key: key))")
            }
        }
        pipeline = nil
        feed = nil
    }

    /// Ends the broadcast with `message`: only the first failure, and none after the stop.
    private func fail(_ message: String) {
        let first = ended.withLock { ended in
            defer { ended = true }
            return !ended
        }
        if first { finishBroadcast(error: message) }
    }

    /// One line into replayd's log (the extension's standard error).
    private func printError(_ line: String) {
        var text = line + "\n"
        _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
    }
}

BroadcastExtension.run(GstUploadHandler())
