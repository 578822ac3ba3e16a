import Foundation
import Logging
@testable import ReplayDaemon
import ReplayCapture
import ReplayIPC
import ReplayMedia
@testable import ReplaySession
import ReplaySystem
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A broadcast's capture run by a scripted capture process (`ScriptedCaptureLauncher`): the
/// surfaces it makes go to the extension untouched, each sample it names is checked against
/// them before it is sent on, a sample not sent goes straight back, and a process that dies or
/// names a sample out of place ends the broadcast's capture with a clear reason.
@Suite struct CaptureProcessBroadcastCaptureTests {
    static let surfaceSize = 4096

    func feed(keepToken: @escaping @Sendable (String) -> Void = { _ in },
              script: @escaping @Sendable (CaptureChannel, ChildProcess) -> Void) -> CaptureProcessBroadcastCapture {
        let plan = BroadcastCaptureStart(id: "bc-test", options: .init(fps: 30, showCursor: true, onlyProcess: nil, audio: [.app]),
                                         backend: .x11(display: nil), protectedWindows: [])
        return CaptureProcessBroadcastCapture(plan: plan, launcher: ScriptedCaptureLauncher(script: script), protectedWindows: ProtectedWindows(),
                                              keepToken: keepToken, logger: Logger(label: "test"))
    }

    /// Waits for the start and answers it with `count` surfaces; runs `body` once the broadcast
    /// is live, with the surfaces still mapped.
    static func serving(_ channel: CaptureChannel, surfaces count: Int = BroadcastCaptureOpened.videoSurfaces + 1, restoreToken: String? = nil,
                        _ body: () -> Void) {
        guard let (command, _) = channel.receive(CaptureCommand.self), case .startBroadcastCapture = command else { return }
        let surfaces = (0..<count).compactMap { try? SharedSurface.create(name: "test-broadcast-\($0)", size: surfaceSize) }
        let descriptors = surfaces.compactMap { try? $0.readOnlyDescriptor() }
        try? channel.send(CaptureReport.broadcastCaptureOpened(width: 2, height: 2, surfaceSize: surfaceSize, restoreToken: restoreToken),
                          descriptors: descriptors)
        descriptors.forEach { close($0) }
        guard let (live, _) = channel.receive(CaptureCommand.self), live == .broadcastLive else { return }
        withExtendedLifetime(surfaces, body)
    }

    static func picture(in surface: UInt16) -> BroadcastMessage {
        .video(.init(surface: surface, matrix: .bt709, range: .video, width: 2, height: 2,
                     planes: [.init(offset: 0, stride: 2, rows: 2), .init(offset: 4, stride: 1, rows: 1), .init(offset: 5, stride: 1, rows: 1)],
                     time: 1_000_000, additions: .init(isRepeat: true, framesDropped: 3)))
    }

    static let sound = BroadcastMessage.audio(.init(surface: UInt16(BroadcastCaptureOpened.videoSurfaces), source: .app, offset: 64, frames: 4,
                                                    channels: 2, sampleRate: 48_000, time: 2_000_000))

    static func send(_ message: BroadcastMessage, on channel: CaptureChannel) {
        try? channel.send(CaptureReport.broadcastSample(Data(BroadcastCodec.encode(message))))
    }

    /// `probe`'s first answer within 10 s, looking every 50 ms (holding no thread between looks).
    static func eventually<T>(_ probe: () -> T?) async -> T? {
        let deadline = MonotonicClock.nanoseconds() + 10_000_000_000
        while MonotonicClock.nanoseconds() < deadline {
            if let answer = probe() { return answer }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    /// What a test's broadcast heard: the samples delivered, and how capture ended.
    final class Heard: Sendable {
        let samples = Mutex<[BroadcastMessage]>([])
        let endings = Mutex<[String?]>([])
        let done = Completion<Void>()
    }

    func run(_ feed: CaptureProcessBroadcastCapture, heard: Heard, accept: @escaping @Sendable (BroadcastMessage) -> Bool = { _ in true }) {
        feed.run(audioOrigin: .zero, deliver: { message in
            heard.samples.withLock { $0.append(message) }
            return accept(message)
        }, ended: { failure in
            heard.endings.withLock { $0.append(failure) }
        })
        feed.whenDone { heard.done.complete(()) }
    }

    @Test func samplesAreSentOnAndOnesNotSentOrReleasedGoBack() async throws {
        let commands = Mutex<[CaptureCommand]>([])
        let feed = feed { channel, process in
            Self.serving(channel) {
                Self.send(Self.picture(in: 1), on: channel)
                Self.send(Self.sound, on: channel)
                Self.send(.dropped(total: 7), on: channel)
                while let (command, _) = channel.receive(CaptureCommand.self) {
                    commands.withLock { $0.append(command) }
                    if command == .stop {
                        try? channel.send(CaptureReport.broadcastCaptureEnded(error: nil))
                        process.signal(SIGTERM)
                        return
                    }
                }
            }
        }
        let opened = try await feed.open()
        defer { opened.descriptors.forEach { close($0) } }
        #expect(opened.descriptors.count == BroadcastCaptureOpened.videoSurfaces + 1 && opened.surfaceSize == Self.surfaceSize)
        let heard = Heard()
        // The picture is sent; the sound is not (as while paused), so its place comes back at once.
        run(feed, heard: heard) { message in if case .video = message { true } else { false } }
        let delivered = await Self.eventually { heard.samples.withLock { $0.count == 3 ? $0 : nil } }
        #expect(delivered == [Self.picture(in: 1), Self.sound, .dropped(total: 7)])
        #expect(feed.dropped == 7, "the process's count of dropped frames rides on its pictures, and on its own when none goes")
        feed.release(surface: 1)  // the extension is done with it
        feed.stop()
        #expect(await heard.done.awaited("the feed's end", within: 10) != nil)
        #expect(commands.withLock { $0 } == [.releaseAudio(offset: 64), .releaseFrame(slot: 1), .stop])
        #expect(heard.endings.withLock { $0 } == [nil])
    }

    @Test(arguments: [
        ("a picture in the audio ring", picture(in: UInt16(BroadcastCaptureOpened.videoSurfaces))),
        ("a picture past the surfaces", picture(in: 9)),
        ("a message that is not a sample", BroadcastMessage.ping(7)),
    ])
    func aSampleOutOfPlaceEndsTheProcessAndIsNotSent(_ what: String, message: BroadcastMessage) async throws {
        let feed = feed { channel, _ in
            Self.serving(channel) {
                Self.send(message, on: channel)
                while channel.receive(CaptureCommand.self) != nil {}
            }
        }
        let opened = try await feed.open()
        defer { opened.descriptors.forEach { close($0) } }
        let heard = Heard()
        run(feed, heard: heard)
        #expect(await heard.done.awaited("the feed's end", within: 10) != nil, "\(what)")
        #expect(heard.samples.withLock { $0 }.isEmpty, "\(what)")
        let endings = heard.endings.withLock { $0 }
        #expect(endings.count == 1 && endings[0]?.contains("the capture process was ended by SIGKILL") == true, "\(what): \(endings)")
    }

    @Test func aProcessThatCrashesEndsTheCaptureWithItsSignal() async throws {
        let feed = feed { channel, process in
            Self.serving(channel) {
                Self.send(Self.picture(in: 0), on: channel)
                process.signal(SIGSEGV)
            }
        }
        let opened = try await feed.open()
        defer { opened.descriptors.forEach { close($0) } }
        let heard = Heard()
        run(feed, heard: heard)
        #expect(await heard.done.awaited("the feed's end", within: 10) != nil)
        let endings = heard.endings.withLock { $0 }
        #expect(endings.count == 1 && endings[0]?.contains("the capture process was ended by SIGSEGV") == true, "\(endings)")
    }

    /// A choice the person made in the portal's dialog this broadcast opened is kept for the next.
    @Test func aNewPortalChoiceIsKept() async throws {
        let kept = Mutex<[String]>([])
        let feed = feed(keepToken: { token in kept.withLock { $0.append(token) } }) { channel, process in
            Self.serving(channel, restoreToken: "token-from-the-dialog") {
                while let (command, _) = channel.receive(CaptureCommand.self), command != .stop {}
                try? channel.send(CaptureReport.broadcastCaptureEnded(error: nil))
                process.signal(SIGTERM)
            }
        }
        let opened = try await feed.open()
        opened.descriptors.forEach { close($0) }
        let heard = Heard()
        run(feed, heard: heard)
        feed.stop()
        #expect(await heard.done.awaited("the feed's end", within: 10) != nil)
        #expect(kept.withLock { $0 } == ["token-from-the-dialog"])
    }

    @Test(arguments: [BroadcastCaptureOpened.videoSurfaces, BroadcastCaptureOpened.videoSurfaces + 2])
    func surfacesOfTheWrongNumberAreRefusedAndTheProcessEnded(count: Int) async throws {
        let feed = feed { channel, _ in
            Self.serving(channel, surfaces: count) {}
            while channel.receive(CaptureCommand.self) != nil {}
        }
        await #expect(throws: DaemonError.self) { _ = try await feed.open() }
        let done = Completion<Void>()
        feed.whenDone { done.complete(()) }
        #expect(await done.awaited("the end of the process", within: 10) != nil)
    }
}
