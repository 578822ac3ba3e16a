import FoundationEssentials
import ReplayExtensionKit
import ReplayMedia
import ReplaySystem

/// The reference upload extension: instead of uploading, it writes one JSON line per
/// lifecycle event and sample into `broadcast.jsonl` in the directory the person chose.
/// Tests read it to see exactly what an extension receives: pictures (with their repeat
/// flag), sound, drops as replayd tells them, and a tick a second, which comes on a still
/// screen too.
final class FileUploadHandler: BroadcastSampleHandler {
    private var output: OutputFile?
    private var frames = 0

    override func broadcastStarted(setupInfo: [String: String]) {
        let path = URL(fileURLWithPath: setupInfo["dir"] ?? "/tmp").appendingPathComponent("broadcast.jsonl").path
        guard let handle = try? OutputFile(creating: path) else {
            finishBroadcast(error: "cannot write \(path)")
            return
        }
        output = handle
        write(["event": "started", "setup": setupInfo])
        updateBroadcastURL("file://\(path)")
        requestTicks(every: .seconds(1))
    }

    override func broadcastTick(at time: MediaTime) { write(["event": "tick", "time": Double(time.nanoseconds) / 1e9]) }
    override func broadcastDroppedFrames(_ count: Int, total: Int) { write(["event": "dropped", "count": count, "total": total]) }

    override func broadcastAnnotated(applicationInfo: [String: String]) { write(["event": "annotated", "application": applicationInfo]) }
    override func broadcastPaused() { write(["event": "paused"]) }
    override func broadcastResumed() { write(["event": "resumed"]) }

    override func broadcastFinished() {
        write(["event": "finished", "frames": frames])
        output?.close()
    }

    override func processSampleBuffer(_ sample: SampleBuffer) {
        switch sample {
        case .video(let frame):
            frames += 1
            let pixels = frame.pixels
            // The mean of a few luma samples: enough to see the demo scene's flashes.
            let step = max(1, pixels.width * pixels.height / 64)
            let luma = stride(from: 0, to: pixels.width * pixels.height, by: step).map { Int(pixels.bytes[$0]) }
            write(["event": "video", "time": Double(frame.time.nanoseconds) / 1e9, "width": pixels.width, "height": pixels.height,
                   "luma": luma.reduce(0, +) / max(1, luma.count), "repeat": frame.isRepeat])
            if frames % 30 == 0 { updateServiceInfo(["frames": String(frames)]) }
        case .audio(let buffer):
            write(["event": buffer.source == .microphone ? "micAudio" : "appAudio", "time": Double(buffer.time.nanoseconds) / 1e9,
                   "frames": buffer.frameCount, "channels": buffer.channels, "rate": buffer.sampleRate])
        }
    }

    private func write(_ fields: [String: any Encodable]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let output, let data = try? encoder.encode(Line(fields: fields)) else { return }
        try? output.write(data + Data("\n".utf8))
    }
}

/// One line's fields, of whatever types, as one JSON object.
private struct Line: Encodable {
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    let fields: [String: any Encodable]

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (name, value) in fields { try container.encode(value, forKey: Key(stringValue: name)) }
    }
}

BroadcastExtension.run(FileUploadHandler())
