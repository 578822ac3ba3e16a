public import ReplayExtensionKit
public import ReplayMedia
import Foundation
import ReplayIPC
import ReplaySystem
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

    /// Connects `handler` to the harness: what it reports lands in `finishError`,
    /// `serviceInfo` and `broadcastURL`. Call everything from one thread, as replayd's kit does.
    public init(_ handler: BroadcastSampleHandler) {
        self.handler = UncheckedHandler(value: handler)
        handler.host = recorder
    }

    // As in a real broadcast, once the handler has called `finishBroadcast(error:)` it hears
    // nothing more but `broadcastFinished`: these calls are then ignored.

    /// `broadcastStarted` with the person's setup values (as `--setup KEY=VALUE` gives them).
    public func start(setupInfo: [String: String] = [:]) { ifLive { $0.broadcastStarted(setupInfo: setupInfo) } }
    /// `broadcastAnnotated` with the app's facts (`executable`, `name`).
    public func annotate(_ applicationInfo: [String: String]) { ifLive { $0.broadcastAnnotated(applicationInfo: applicationInfo) } }
    /// `broadcastPaused`, as when the person pauses.
    public func pause() { ifLive { $0.broadcastPaused() } }
    /// `broadcastResumed`, as when the person resumes.
    public func resume() { ifLive { $0.broadcastResumed() } }
    /// `broadcastFinished`, which replayd sends after a stop and after the handler's own `finishBroadcast(error:)`.
    public func finish() { handler.value.broadcastFinished() }

    private func ifLive(_ call: (BroadcastSampleHandler) -> Void) {
        if finishError == nil { call(handler.value) }
    }

    /// A picture of one flat colour (Y, U, V, in `format`'s coding), timed at `time`, handed
    /// over as replayd hands it: in a sealed shared surface mapped read-only (a handler that
    /// writes into it crashes here as it would live), described by a `video` message that went
    /// through the wire codec, built into a `PixelBuffer` by the kit's own code.
    public func sendVideo(width: Int = 1280, height: Int = 720, time: MediaTime, luma: UInt8 = 128, u: UInt8 = 128, v: UInt8 = 128,
                          format: PictureFormat = .bt601VideoRange, orientation: Orientation = .up) {
        guard finishError == nil else { return }
        handler.value.processSampleBuffer(.video(Self.picture(width: width, height: height, time: time, luma: luma, u: u, v: v,
                                                              format: format, orientation: orientation)))
    }

    /// The sample `sendVideo` hands over; its memory is unmapped when the last reference is gone.
    private static func picture(width: Int, height: Int, time: MediaTime, luma: UInt8, u: UInt8, v: UInt8, format: PictureFormat,
                                orientation: Orientation) -> VideoSample {
        let size = PixelBuffer.byteCount(width: width, height: height)
        do {
            let surface = try SharedSurface.create(name: "harness-picture", size: size)
            let bytes = surface.mutableBytes!  // created writable
            let lumaCount = width * height, chromaCount = lumaCount / 4
            bytes[0..<lumaCount].initializeMemory(as: UInt8.self, repeating: luma)
            let uPlane = UnsafeMutableRawBufferPointer(rebasing: bytes[lumaCount..<lumaCount + chromaCount])
            let vPlane = UnsafeMutableRawBufferPointer(rebasing: bytes[lumaCount + chromaCount..<size])
            uPlane.initializeMemory(as: UInt8.self, repeating: u)
            vPlane.initializeMemory(as: UInt8.self, repeating: v)
            let readOnly = try SharedSurface.mapReadOnly(descriptor: try surface.readOnlyDescriptor())
            let planes = [(0, width, height), (lumaCount, width / 2, height / 2), (lumaCount + chromaCount, width / 2, height / 2)]
                .map { BroadcastMessage.VideoFrame.Plane(offset: UInt64($0.0), stride: UInt32($0.1), rows: UInt32($0.2)) }
            let sent = BroadcastMessage.video(.init(surface: 0, picture: format, width: UInt32(width), height: UInt32(height),
                                                    planes: planes, time: time.nanoseconds, orientation: .init(orientation)))
            guard case .video(let frame) = try BroadcastCodec.decode(framed: BroadcastCodec.encode(sent),
                                                                     surfaces: .init(count: 1, size: UInt64(size))) else {
                preconditionFailure("a video message decoded as another")
            }
            // Only the read-only mapping stays (the writable one goes with `surface` on return),
            // until the picture's last reference is gone, as a surface lent by replayd.
            return try ReceivedPicture.sample(of: frame, in: readOnly.bytes) { _ = readOnly }
        } catch {
            preconditionFailure("the harness cannot make a \(width)x\(height) picture: \(error)")
        }
    }

    /// A sine tone of `frequency` Hz at amplitude 0.25, `frames` frames of 48 kHz stereo starting
    /// at `time` (its phase follows `time`, so periods sent back to back join without a click).
    public func sendAudio(_ source: AudioSource, frames: Int = 1024, frequency: Double = 440, time: MediaTime) {
        guard finishError == nil else { return }
        let rate = 48_000.0
        let start = Double(time.nanoseconds) / 1e9
        var samples: [Float] = []
        samples.reserveCapacity(frames * 2)
        for frame in 0..<frames {
            let value = Float(0.25 * sin(2 * Double.pi * frequency * (start + Double(frame) / rate)))
            samples += [value, value]
        }
        let buffer = AudioBuffer(source: source, time: time, sampleRate: 48_000, channels: 2,
                                 samples: samples)
        handler.value.processSampleBuffer(.audio(buffer))
    }

    /// The error the handler ended the broadcast with, if it did.
    public var finishError: String? { recorder.state.withLock { $0.finishError } }
    /// The last service info the handler reported (`updateServiceInfo`); empty before any.
    public var serviceInfo: [String: String] { recorder.state.withLock { $0.serviceInfo } }
    /// The last broadcast URL the handler reported (`updateBroadcastURL`), if any.
    public var broadcastURL: String? { recorder.state.withLock { $0.broadcastURL } }
}
