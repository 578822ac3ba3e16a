public import ReplayExtensionKit
public import ReplayMedia
import Foundation
import ReplayIPC
import Synchronization

/// Drives a `BroadcastSampleHandler` without a daemon, so an extension author can test
/// their handler offline: feed it a lifecycle and synthetic samples, then look at what it
/// told the host (service info, broadcast URL, an error that ended the broadcast).
public final class BroadcastHarness: Sendable {
    private final class Recorder: BroadcastHost {
        let state = Mutex((finishError: String?.none, serviceInfo: [String: String](), broadcastURL: String?.none))
        func send(_ message: BroadcastMessage) {
            state.withLock { state in
                switch message {
                case .finish(let error): state.finishError = error
                case .serviceInfo(let info): state.serviceInfo = info
                case .broadcastURL(let url): state.broadcastURL = url
                default: break
                }
            }
        }
    }

    private let recorder = Recorder()
    private let handler: UncheckedHandler

    /// Holds the handler; the harness calls it from the caller's thread only.
    private struct UncheckedHandler: @unchecked Sendable {
        let value: BroadcastSampleHandler
    }

    public init(_ handler: BroadcastSampleHandler) {
        self.handler = UncheckedHandler(value: handler)
        handler.host = recorder
    }

    public func start(setupInfo: [String: String] = [:]) { handler.value.broadcastStarted(setupInfo: setupInfo) }
    public func annotate(_ applicationInfo: [String: String]) { handler.value.broadcastAnnotated(applicationInfo: applicationInfo) }
    public func pause() { handler.value.broadcastPaused() }
    public func resume() { handler.value.broadcastResumed() }
    public func finish() { handler.value.broadcastFinished() }

    /// A picture of one flat colour (Y, U, V), timed at `time`.
    public func sendVideo(width: Int = 1280, height: Int = 720, time: MediaTime, luma: UInt8 = 128, u: UInt8 = 128, v: UInt8 = 128) {
        let pixels = PixelBuffer(width: width, height: height)
        let bytes = pixels.bytes
        let chroma = width * height / 4
        bytes[0..<width * height].initializeMemory(as: UInt8.self, repeating: luma)
        UnsafeMutableRawBufferPointer(rebasing: bytes[width * height..<width * height + chroma]).initializeMemory(as: UInt8.self, repeating: u)
        UnsafeMutableRawBufferPointer(rebasing: bytes[width * height + chroma..<width * height + 2 * chroma])
            .initializeMemory(as: UInt8.self, repeating: v)
        handler.value.processSampleBuffer(.video(VideoSample(time: time, pixels: pixels)), type: .video)
    }

    /// A sine tone of `frequency` Hz, `frames` frames of 48 kHz stereo starting at `time`.
    public func sendAudio(_ type: SampleBufferType, frames: Int = 1024, frequency: Double = 440, time: MediaTime) {
        let rate = 48_000.0
        let start = Double(time.nanoseconds) / 1e9
        var samples: [Float] = []
        samples.reserveCapacity(frames * 2)
        for frame in 0..<frames {
            let value = Float(0.25 * sin(2 * Double.pi * frequency * (start + Double(frame) / rate)))
            samples += [value, value]
        }
        let buffer = AudioBuffer(source: type == .micAudio ? .microphone : .app, time: time, sampleRate: 48_000, channels: 2,
                                 samples: samples)
        handler.value.processSampleBuffer(.audio(buffer), type: type)
    }

    /// The error the handler ended the broadcast with, if it did.
    public var finishError: String? { recorder.state.withLock { $0.finishError } }
    public var serviceInfo: [String: String] { recorder.state.withLock { $0.serviceInfo } }
    public var broadcastURL: String? { recorder.state.withLock { $0.broadcastURL } }
}
