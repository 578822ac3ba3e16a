package import ReplayMedia
import ReplayProcessing

/// Shapes the broadcast's samples for the encoder pipeline: pictures fitted and capped in
/// rate by `VideoSource`, the app's and the microphone's sound mixed into one track, and on a
/// still screen the last picture again every 250 ms, so receivers never starve. Called on
/// the broadcast's callback thread only.
package struct WebRTCFeed {
    private var source: VideoSource
    private var mixer = AudioMixer()

    package init(setup: WebRTCVideoSetup) {
        source = VideoSource(settings: .init(mode: setup.mode, format: setup.format, applyRotation: true))
    }

    package mutating func feed(_ sample: SampleBuffer, into session: WebRTCSession) {
        switch sample {
        case .video(let frame):
            if let shaped = source.process(frame) { session.push(shaped) }
        case .audio(let buffer):
            mixer.append(buffer)
            for period in mixer.nextPeriods() { session.push(period) }
            if let repeated = source.idle(now: buffer.time) { session.push(repeated) }
        }
    }
}
