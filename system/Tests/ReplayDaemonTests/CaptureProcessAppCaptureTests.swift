import Foundation
import Logging
@testable import ReplayDaemon
import ReplayCapture
import ReplayIPC
@testable import ReplaySession
import ReplaySystem
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// In-app capture run by a scripted capture process (`ScriptedCaptureLauncher`): pictures come
/// through shared memory to the app, a slot goes back once sent, and a process that dies or
/// misbehaves ends the capture alone with a clear reason.
@Suite struct CaptureProcessAppCaptureTests {
    /// The app's end: what it was sent, and how it heard the capture end.
    final class RecordingClient: CaptureClient {
        let frames = Mutex<[(CapturedFrameInfo, [UInt8])]>([])
        let stopped = Mutex<[String?]>([])
        /// Happens with the first picture delivered.
        let firstFrame = Completion<Void>()
        let busy: Bool

        init(busy: Bool = false) { self.busy = busy }

        func deliver(_ info: CapturedFrameInfo, pixels: UnsafeRawBufferPointer) -> CaptureDelivery {
            if busy { return .busy }
            frames.withLock { $0.append((info, Array(pixels))) }
            firstFrame.complete(())
            return .sent
        }

        func captureStopped(error: String?) { stopped.withLock { $0.append(error) } }
    }

    static let slots = 2, slotSize = 6

    func capture(client: RecordingClient, id: String = "capture-1", keepToken: @escaping @Sendable (String) -> Void = { _ in },
                 script: @escaping @Sendable (CaptureChannel, ChildProcess) -> Void) -> CaptureProcessAppCapture {
        let plan = AppCaptureStart(id: id, pid: 4242, fps: 30, showCursor: false, backend: .x11(display: nil), protectedWindows: [])
        return CaptureProcessAppCapture(plan: plan, launcher: ScriptedCaptureLauncher(script: script), protectedWindows: ProtectedWindows(),
                                        client: client, keepToken: keepToken, logger: Logger(label: "test"))
    }

    /// The person chose in the portal's dialog that this capture opened: the next capture must
    /// not ask again, so replayd keeps the token the process reports with its start.
    @Test func aNewPortalChoiceMadeInTheCapturesDialogIsKept() async throws {
        let kept = Mutex<[String]>([])
        let session = capture(client: RecordingClient(), keepToken: { token in kept.withLock { $0.append(token) } }) { channel, process in
            guard case (.startAppCapture, _)? = channel.receive(CaptureCommand.self),
                  let surface = try? SharedSurface.create(name: "test-app-capture", size: Self.slots * Self.slotSize),
                  let descriptor = try? surface.readOnlyDescriptor() else { return }
            try? channel.send(CaptureReport.appCaptureStarted(width: 2, height: 2, slots: Self.slots, slotSize: Self.slotSize,
                                                              restoreToken: "token-from-the-dialog"), descriptors: [descriptor])
            close(descriptor)
            withExtendedLifetime(surface) {
                while let (command, _) = channel.receive(CaptureCommand.self), command != .stop {}
                try? channel.send(CaptureReport.appCaptureEnded(error: nil, captured: 0, dropped: 0))
                process.signal(SIGTERM)
            }
        }
        _ = try await session.start()
        session.stop()
        try await session.waitUntilFinished()
        #expect(kept.withLock { $0 } == ["token-from-the-dialog"])
    }

    /// Waits for the start and answers it with two slots of shared memory, the first holding
    /// 1...6 and the second 7...12; returns the memory (kept mapped by the caller).
    static func answerStart(_ channel: CaptureChannel) -> SharedSurface? {
        guard let (command, _) = channel.receive(CaptureCommand.self), case .startAppCapture(let plan) = command, plan.pid == 4242,
              let surface = try? SharedSurface.create(name: "test-app-capture", size: slots * slotSize),
              let bytes = surface.mutableBytes, let descriptor = try? surface.readOnlyDescriptor() else { return nil }
        for index in 0..<slots * slotSize { bytes[index] = UInt8(index + 1) }
        defer { close(descriptor) }
        try? channel.send(CaptureReport.appCaptureStarted(width: 2, height: 2, slots: slots, slotSize: slotSize), descriptors: [descriptor])
        return surface
    }

    /// Answers the start (`answerStart`), then runs `body` while that shared memory stays mapped.
    static func serving(_ channel: CaptureChannel, _ body: () -> Void) {
        guard let surface = answerStart(channel) else { return }
        withExtendedLifetime(surface, body)
    }

    @Test func picturesReachTheAppFromSharedMemoryAndEachSlotGoesBack() async throws {
        let client = RecordingClient()
        let released = Mutex<[Int]>([])
        let session = capture(client: client) { channel, process in
            Self.serving(channel) {
                try? channel.send(CaptureReport.frame(slot: 1, bytes: 6, time: 1.5, width: 2, height: 2))
                try? channel.send(CaptureReport.frame(slot: 0, bytes: 6, time: 1.6, width: 2, height: 2))
                while let (command, _) = channel.receive(CaptureCommand.self) {
                    switch command {
                    case .releaseFrame(let slot): released.withLock { $0.append(slot) }
                    case .stop:
                        try? channel.send(CaptureReport.appCaptureEnded(error: nil, captured: 2, dropped: 0))
                        process.signal(SIGTERM)
                        return
                    default: continue
                    }
                }
            }
        }
        let size = try await session.start()
        #expect(size.width == 2 && size.height == 2)
        // Both pictures in before the stop: the stop may overtake pictures still on their way.
        let deadline = MonotonicClock.nanoseconds() + 5_000_000_000
        while client.frames.withLock({ $0.count }) < 2 && MonotonicClock.nanoseconds() < deadline { usleep(10_000) }
        session.stop()
        try await session.waitUntilFinished()
        let frames = client.frames.withLock { $0 }
        #expect(frames.map(\.1) == [[7, 8, 9, 10, 11, 12], [1, 2, 3, 4, 5, 6]])
        #expect(frames.map(\.0.time) == [1.5, 1.6])
        #expect(released.withLock { $0 } == [1, 0])
        #expect(client.stopped.withLock { $0 } == [nil])
        #expect(session.phase == .finished)
    }

    /// Captures starting and ending on four threads at once, 150 each: every one gets its
    /// own picture and ends as its process says. (Here a memfd closed twice once closed another
    /// capture's channel, which then never ended; and a process that exited with a
    /// `releaseFrame` unread made replayd's next read fail with ECONNRESET, which hid the
    /// `appCaptureEnded` before it.)
    @Test(arguments: 0..<4) func manyCapturesAtOnceEachGetTheirOwnPicturesAndEnd(lane: Int) async throws {
        for round in 0..<150 {
            let client = RecordingClient()
            let session = capture(client: client, id: "L\(lane)R\(round)") { channel, process in
                Self.serving(channel) {
                    try? channel.send(CaptureReport.frame(slot: 1, bytes: 6, time: Double(round), width: 2, height: 2))
                    while let (command, _) = channel.receive(CaptureCommand.self) {
                        guard case .stop = command else { continue }
                        try? channel.send(CaptureReport.appCaptureEnded(error: nil, captured: 1, dropped: 0))
                        process.signal(SIGTERM)
                        return
                    }
                }
            }
            _ = try await session.start()
            let ended = Completion<Void>()
            session.onFinish { ended.complete(()) }
            try #require(await client.firstFrame.awaited("lane \(lane), round \(round): a picture", within: 10) != nil)
            session.stop()
            try #require(await ended.awaited("lane \(lane), round \(round): the end", within: 10) != nil)
            let frames = client.frames.withLock { $0 }
            #expect(frames.map(\.1) == [[7, 8, 9, 10, 11, 12]] && frames.first?.0.time == Double(round), "lane \(lane), round \(round)")
            #expect(client.stopped.withLock { $0 } == [nil])
        }
    }

    @Test func aProcessThatDiesMidWayEndsTheCaptureWithTheSignalTheAppHears() async throws {
        let client = RecordingClient()
        let session = capture(client: client) { channel, process in
            Self.serving(channel) {
                try? channel.send(CaptureReport.frame(slot: 0, bytes: 6, time: 1, width: 2, height: 2))
                Thread.sleep(forTimeInterval: 0.2)
                process.signal(SIGSEGV)
            }
        }
        _ = try await session.start()
        try await session.waitUntilFinished()
        #expect(client.stopped.withLock { $0 } == ["the capture process was ended by SIGSEGV (Segmentation fault)"])
        #expect(session.phase == .failed)
        #expect(client.frames.withLock { $0.count } == 1)
    }

    @Test func aPictureOutsideTheSharedMemoryEndsTheProcessAndReachesNoApp() async throws {
        let client = RecordingClient()
        let session = capture(client: client) { channel, process in
            Self.serving(channel) {
                // Past the second slot, then longer than a slot: replayd must read neither.
                try? channel.send(CaptureReport.frame(slot: 2, bytes: 6, time: 1, width: 2, height: 2))
                try? channel.send(CaptureReport.frame(slot: 1, bytes: 4096, time: 1, width: 2, height: 2))
                Thread.sleep(forTimeInterval: 1)  // replayd kills it meanwhile; its reaper alone waits for it
            }
        }
        do {
            _ = try await session.start()
            try await session.waitUntilFinished()
            #expect(client.stopped.withLock { $0 } == ["the capture process was ended by SIGKILL (Killed)"])
        } catch let error as DaemonError {
            // The pictures follow the start's answer at once: replayd may kill the process before
            // `start` has returned, and the app then hears why as the start's answer instead.
            #expect(error.message == "the in-app capture ended as it started: the capture process was ended by SIGKILL (Killed)")
            try await session.waitUntilFinished()
            #expect(client.stopped.withLock { $0 }.isEmpty)
        }
        #expect(client.frames.withLock { $0.isEmpty })
    }

    @Test func aStartWithoutSharedMemoryIsRefusedAndTheProcessEnded() async throws {
        let client = RecordingClient()
        let session = capture(client: client) { channel, process in
            _ = channel.receive(CaptureCommand.self)
            try? channel.send(CaptureReport.appCaptureStarted(width: 2, height: 2, slots: 2, slotSize: 6))  // no descriptor
            Thread.sleep(forTimeInterval: 1)  // replayd kills it meanwhile
        }
        do {
            _ = try await session.start()
            Issue.record("the start succeeded")
        } catch {
            #expect(error.message == "the capture process shared no usable memory for the pictures", "\(error)")
        }
        try await session.waitUntilFinished()
        // The start's error is the app's answer; it hears no second end.
        #expect(client.stopped.withLock { $0 }.isEmpty)
    }

    @Test func anAppThatIsBehindLosesPicturesNotSlots() async throws {
        let client = RecordingClient(busy: true)
        let released = Mutex(0)
        let session = capture(client: client) { channel, process in
            Self.serving(channel) {
                for _ in 0..<5 { try? channel.send(CaptureReport.frame(slot: 0, bytes: 6, time: 1, width: 2, height: 2)) }
                while let (command, _) = channel.receive(CaptureCommand.self) {
                    if case .releaseFrame = command, released.withLock({ $0 += 1; return $0 }) == 5 {
                        try? channel.send(CaptureReport.appCaptureEnded(error: nil, captured: 5, dropped: 0))
                        process.signal(SIGTERM)
                        return
                    }
                }
            }
        }
        _ = try await session.start()
        try await session.waitUntilFinished()
        #expect(released.withLock { $0 } == 5)
        #expect(client.frames.withLock { $0.isEmpty })
    }
}
