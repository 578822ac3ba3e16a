import Dispatch
import Foundation
import ReplayCapture
@testable import ReplayDaemon
@_spi(OpenReplayKitInternal) import ReplayMedia
import ReplaySystem
import Synchronization
import Testing
@testable import ReplaySession

/// A clock the test moves by hand.
final class ManualClock: SessionClock {
    private let time = Mutex(MediaTime(seconds: 100))
    func now() -> MediaTime { time.withLock { $0 } }
    func set(_ seconds: Double) { time.withLock { $0 = MediaTime(seconds: seconds) } }
}

/// A screen the test drives: each command it is given becomes a picture, a size change or a failure.
final class FakeScreen: ScreenCapturing, @unchecked Sendable {
    // @unchecked: `pool` is set once before `run`, the rest is immutable or locked.
    enum Command: Sendable {
        case frame(at: Double)
        /// A picture that repeats the last (a still screen), as the X11 source's keep-alive.
        case repeatedFrame(at: Double)
        /// Frames capture could not deliver (no free picture), counted as a real source counts them.
        case drop(Int)
        case resize(width: Int, height: Int)
        case fail(String)
    }

    private let size: Mutex<(width: Int, height: Int)>
    var frameSize: (width: Int, height: Int) { size.withLock { $0 } }
    var pool = PixelBufferPool()
    let counters = CaptureCounters()
    private let commands = BoundedQueue<Command>(capacity: .max)
    private let running = Mutex(false)
    let finished = Completion<Void>()

    init(width: Int = 64, height: Int = 48) { size = Mutex((width, height)) }

    func send(_ command: Command) { commands.append(command) }
    var isRunning: Bool { running.withLock { $0 } }

    func run(output: any CaptureOutput, stop: StopFlag) throws(CaptureError) {
        running.withLock { $0 = true }
        defer {
            running.withLock { $0 = false }
            finished.complete(())
        }
        let commands = self.commands
        stop.whenRaised { commands.close() }
        while let command = commands.pop() {
            switch command {
            case .drop(let count):
                for _ in 0..<count { counters.count(delivered: false, repeated: false) }
            case .frame(let seconds), .repeatedFrame(let seconds):
                let isRepeat = if case .repeatedFrame = command { true } else { false }
                // A fake waits for a free picture where a real source drops: the test decides what is captured.
                let (width, height) = frameSize
                var taken = pool.take(width: width, height: height, format: .bt601VideoRange)
                while taken == nil && !stop.isRaised {
                    sched_yield()
                    taken = pool.take(width: width, height: height, format: .bt601VideoRange)
                }
                guard let pixels = taken else { return }
                let frame = VideoSample(time: MediaTime(seconds: seconds), pixels: pixels, isRepeat: isRepeat)
                while !output.offer(frame) && !stop.isRaised { sched_yield() }
                counters.count(delivered: true, repeated: isRepeat)
            case .resize(let width, let height):
                // As the X11 source: reported, then pictures go on at the new size.
                size.withLock { $0 = (width, height) }
                output.formatChanged(width: width, height: height)
            case .fail(let why):
                throw CaptureError(.connectionLost, why)
            }
        }
    }
}

/// Audio the test drives: 10 ms buffers of 48 kHz stereo at the times it names.
final class FakeAudio: AudioCapturing, @unchecked Sendable {
    // @unchecked: immutable but for the locked queue.
    let source: AudioSource
    private let commands = BoundedQueue<Double>(capacity: .max)

    init(source: AudioSource) { self.source = source }

    /// Buffers of 10 ms from `start` for `seconds`.
    func play(from start: Double, seconds: Double) {
        for index in 0..<Int((seconds * 100).rounded()) { commands.append(start + Double(index) / 100) }
    }

    func run(output: any CaptureOutput, stop: StopFlag) throws(CaptureError) {
        let commands = self.commands
        stop.whenRaised { commands.close() }
        while let time = commands.pop() {
            output.append(AudioBuffer(source: source, time: MediaTime(seconds: time), sampleRate: 48_000, channels: 2,
                                      samples: [Float](repeating: 0.25, count: 960)))
        }
    }
}

/// Hands out the fakes the test made; can hold the start back, or refuse.
final class FakeCaptureBackend: CaptureBackend, @unchecked Sendable {
    // @unchecked: everything mutable is behind `lock`.
    let name = "fake"
    let screen: FakeScreen
    let audio: [AudioSource: FakeAudio]
    private let lock = Mutex((screenError: CaptureError?.none, gate: DispatchSemaphore?.none))
    /// Happens when a session first asks for the screen.
    let screenRequested = Completion<Void>()

    init(screen: FakeScreen = FakeScreen(), audio: [AudioSource] = []) {
        self.screen = screen
        self.audio = Dictionary(uniqueKeysWithValues: audio.map { ($0, FakeAudio(source: $0)) })
    }

    func listSources() -> SourceListing { SourceListing() }

    func grabHotkey(_ chord: KeyChord, onPress: @escaping @Sendable () -> Void) throws(CaptureError) -> any HotkeyRelease {
        throw CaptureError(.hotkeyUnavailable, "the fake desktop has no keyboard")
    }

    func refuseScreen(_ error: CaptureError) { lock.withLock { $0.screenError = error } }
    /// Opening the screen blocks (as a real backend's start does) until the test signals the returned gate.
    func holdScreen() -> DispatchSemaphore {
        let gate = DispatchSemaphore(value: 0)
        lock.withLock { $0.gate = gate }
        return gate
    }

    func makeScreenCapture(_ options: ScreenCaptureOptions) throws(CaptureError) -> any ScreenCapturing {
        let (error, gate) = lock.withLock { ($0.screenError, $0.gate) }
        screenRequested.complete(())
        // The held start blocks here, as a backend's synchronous start does, until the test lets it go.
        gate?.wait()
        if let error { throw error }
        return screen
    }

    func makeAudioCapture(_ source: AudioSource, selection: AudioSelection) throws(CaptureError) -> any AudioCapturing {
        guard let fake = audio[source] else { throw CaptureError(.audioUnavailable, "no audio server (fake)") }
        return fake
    }
}

/// Awaits `condition`, a state with no event of its own to await, looking every millisecond
/// (holding no thread between looks); fails the test (instead of hanging it) after `seconds`.
func eventually(_ what: String, within seconds: Double = 10, sourceLocation: SourceLocation = #_sourceLocation,
                _ condition: () -> Bool) async {
    let deadline = MonotonicClock.nanoseconds() + Int64(seconds * 1e9)
    while !condition() {
        if MonotonicClock.nanoseconds() > deadline {
            Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
            return
        }
        try? await Task.sleep(for: .milliseconds(1))
    }
}
