import ReplayMedia
import ReplayProcessing

/// Shapes the broadcast's samples for the pipeline: pictures fitted and capped in rate by
/// `VideoSource` (one size for the whole broadcast, as muxers want), the app's and the
/// microphone's sound mixed into one track when the tail takes sound, and on a still screen
/// the last picture again every 250 ms. Called on the broadcast's callback thread only.
struct GstFeed {
    private let source: VideoSource
    private var mixer: AudioMixer?

    init(settings: GstSettings, takesAudio: Bool) {
        source = VideoSource(settings: .init(mode: .video, format: .fit(maxDimension: settings.maxSize), applyRotation: true,
                                             frameRateCap: settings.fps))
        mixer = takesAudio ? AudioMixer() : nil
    }

    mutating func feed(_ sample: SampleBuffer, into pipeline: GstPipeline) {
        switch sample {
        case .video(let frame):
            if let shaped = source.process(frame) { pipeline.push(shaped) }
        case .audio(let buffer):
            // Mutated in place through the optional: a copy would copy its buffers each time.
            mixer?.append(buffer)
            for period in mixer?.nextPeriods() ?? [] { pipeline.push(period) }
            if let repeated = source.idle(now: buffer.time) { pipeline.push(repeated) }
        }
    }
}
