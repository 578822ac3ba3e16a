import Foundation
import ReplayExtensionKit
import ReplayMedia
import ReplayProcessing

/// The extension: replayd calls these methods, one at a time, on one thread, in order:
/// `broadcastStarted`, samples (with `broadcastPaused`/`broadcastResumed` between them), then
/// `broadcastFinished`. This one writes the broadcast as HLS into a folder the person chose.
///
/// Make it yours: check your own setup fields in `Setup`, and swap `HLSWriter`'s muxer for
/// your service's (or send the encoded packets yourself).
final class HLSHandler: BroadcastSampleHandler {
    /// What the person entered (the manifest's `setupFields`), checked.
    struct Setup: Equatable {
        var directory: String
        var segmentSeconds: Int

        /// Every problem is a sentence the person can act on: it is what they will see.
        init(_ setupInfo: [String: String]) throws(HLSError) {
            guard let directory = setupInfo["dir"], directory.hasPrefix("/") else {
                throw HLSError("dir must be the absolute path of a directory")
            }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw HLSError("\(directory) is not a directory")
            }
            // The sandbox lets an extension write only into the `directory` fields the person chose
            // (and a small /tmp): try it now, so that a start into a read-only folder fails at once
            // with a clear message, not later in the middle of the broadcast.
            let probe = directory + "/.template-hls-probe-\(getpid())"
            guard FileManager.default.createFile(atPath: probe, contents: Data()) else {
                throw HLSError("cannot write into \(directory)")
            }
            try? FileManager.default.removeItem(atPath: probe)
            self.directory = directory

            let segment = setupInfo["segment"]?.trimmingCharacters(in: .whitespaces) ?? ""
            if segment.isEmpty {
                segmentSeconds = 2
            } else if let seconds = Int(segment), (1...10).contains(seconds) {
                segmentSeconds = seconds
            } else {
                throw HLSError("segment must be a whole number of seconds from 1 to 10, not '\(segment)'")
            }
        }
    }

    private var setup: Setup?
    private var writer: HLSWriter?
    /// Once the broadcast has failed, the handler does nothing more (replayd sends only
    /// `broadcastFinished` after `finishBroadcast(error:)`, but a sample may already be on its way).
    private(set) var failed = false

    /// Shapes replayd's pictures for the stream: scaled to fit 1280x1280 (a 1920x1080 screen
    /// becomes 1280x720; smaller screens keep their size), at most 30 pictures a second, and
    /// the last one repeated when the screen has been still for 250 ms.
    private let videoSource = VideoSource(settings: .init(mode: .video, format: .fit(maxDimension: 1280), frameRateCap: 30))
    /// The app's sound and the microphone, mixed into one stereo track of 1024-frame periods
    /// (exactly one AAC frame each).
    private var mixer = AudioMixer()

    override func broadcastStarted(setupInfo: [String: String]) {
        do {
            let setup = try Setup(setupInfo)
            self.setup = setup
            // Where viewers watch: `replay broadcast status` and the host app show it.
            updateBroadcastURL("file://\(setup.directory)/stream.m3u8")
        } catch {
            // Failing here fails the start: `replay broadcast start` prints this and exits 1.
            fail(error.description)
        }
    }

    override func processSampleBuffer(_ sample: SampleBuffer) {
        guard !failed, let setup else { return }
        do {
            switch sample {
            case .video(let frame):
                // nil: over the frame-rate cap. Drop our reference quickly either way: while we
                // hold a picture, its shared surface is not replayd's to fill again.
                guard let picture = videoSource.process(frame) else { return }
                try writer(for: picture.pixels, setup).write(picture.pixels, at: picture.time)
                if let writer, writer.picturesWritten % 30 == 0 {
                    updateServiceInfo(["pictures": String(writer.picturesWritten), "size": "\(writer.settings.width)x\(writer.settings.height)"])
                }
            case .audio(let buffer):
                mixer.append(buffer)
                for period in mixer.nextPeriods() { try writer?.write(audio: period.samples, at: period.time) }
                // Sound arrives every ~21 ms: the clock that repeats a still picture.
                if let repeated = videoSource.idle(now: buffer.time) { try writer?.write(repeated.pixels, at: repeated.time) }
            }
        } catch {
            fail(error.description)
        }
    }

    /// The encoders take the size of the first picture.
    private func writer(for pixels: PixelBuffer, _ setup: Setup) throws(HLSError) -> HLSWriter {
        if let writer { return writer }
        let writer = try HLSWriter(directory: setup.directory, settings: .init(
            width: pixels.width, height: pixels.height, segmentSeconds: setup.segmentSeconds))
        self.writer = writer
        return writer
    }

    override func broadcastPaused() {
        // Nothing to do here: no samples come while paused, and the stamps jump over the pause.
        // (The shipped HLS extension repeats the last picture to keep a live stream up.)
    }

    override func broadcastFinished() {
        // After a stop, or after our own `finishBroadcast(error:)`. We have 5 s to finish and exit.
        defer { writer = nil }  // frees the encoders
        guard !failed, let writer else { return }
        do {
            for period in mixer.finish() { try writer.write(audio: period.samples, at: period.time) }
            try writer.finish()
        } catch {
            // The broadcast is over; standard error goes into replayd's log.
            FileHandle.standardError.write(Data("template-hls: \(error)\n".utf8))
        }
    }

    /// Ends the broadcast as failed: the person and the host app see `message`.
    private func fail(_ message: String) {
        guard !failed else { return }
        failed = true
        writer = nil
        finishBroadcast(error: message)
    }
}
