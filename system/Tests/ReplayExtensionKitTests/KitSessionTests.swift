import Foundation
@_spi(OpenReplayKitInternal) import ReplayExtensionKit
@_spi(OpenReplayKitInternal) import ReplayIPC
@_spi(OpenReplayKitInternal) import ReplayMedia
import ReplaySystem
import ReplayTestEvents
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A handler that notes, under a lock, what the kit's own session loop hands it.
final class NotingHandler: BroadcastSampleHandler, @unchecked Sendable {
    // @unchecked: its state is behind `notes`; the kit calls it from one thread.
    let notes = Mutex<(events: [String], ticks: [MediaTime])>(([], []))
    /// Each tick as it comes, for a test to await.
    let ticked = Events<Void>()
    let interval: Duration?

    init(interval: Duration? = nil) {
        self.interval = interval
        super.init()
    }

    override func broadcastStarted(setupInfo: [String: String]) {
        if let interval { requestTicks(every: interval) }
        notes.withLock { $0.events.append("started") }
    }
    override func processSampleBuffer(_ sample: SampleBuffer) {
        guard case .video(let frame) = sample else { return }
        notes.withLock { $0.events.append(frame.isRepeat ? "repeat" : "picture") }
    }
    override func broadcastDroppedFrames(_ count: Int, total: Int) { notes.withLock { $0.events.append("dropped \(count) of \(total)") } }
    override func broadcastTick(at time: MediaTime) {
        notes.withLock { $0.ticks.append(time) }
        ticked.record()
    }
    override func broadcastFinished() { notes.withLock { $0.events.append("finished") } }
}

/// replayd's side of a broadcast, played over a socketpair against the kit's real session loop
/// (`BroadcastExtension.serve`, which `run` calls), with one 64x32 picture surface.
final class FakeReplayd: @unchecked Sendable {
    // @unchecked: `socket` and `surface` are immutable; the kit's thread only reports `done`.
    let socket: Int32
    let surface: SharedSurface
    let done = Events<Void>()
    let failure = Mutex<String?>(nil)
    static let size = PixelBuffer.byteCount(width: 64, height: 32)

    init(handler: BroadcastSampleHandler, announcedMinorVersion: UInt16?) throws {
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw SystemError(call: "socketpair", errno: errno)
        }
        socket = ends[0]
        surface = try SharedSurface.create(name: "kit-test", size: Self.size)
        let kitEnd = ends[1]
        let box = UncheckedHandler(handler)
        Thread.detachNewThread { [self] in
            do {
                try BroadcastExtension.serve(socket: kitEnd, handler: box.value, announcedMinorVersion: announcedMinorVersion)
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
            close(kitEnd)
            done.record()
        }
        let descriptor = try surface.readOnlyDescriptor()
        defer { close(descriptor) }
        try DescriptorPassing.send(socket: socket, bytes: BroadcastCodec.encode(.hello(.init(surfaceCount: 1, surfaceSize: UInt64(Self.size)))),
                                   descriptors: [descriptor])
    }

    deinit { close(socket) }

    struct UncheckedHandler: @unchecked Sendable {
        let value: BroadcastSampleHandler
        init(_ value: BroadcastSampleHandler) { self.value = value }
    }

    func send(_ message: BroadcastMessage) throws {
        try DescriptorPassing.send(socket: socket, bytes: BroadcastCodec.encode(message), descriptors: [])
    }

    /// The next message from the kit that is not a `release`; nil if none comes within 30 s (a failure, not a measurement).
    func receive() throws -> BroadcastMessage? {
        while true {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 30_000) > 0 else { return nil }
            let (bytes, _) = try DescriptorPassing.receive(socket: socket, maxBytes: BroadcastCodec.maxFramedMessage, maxDescriptors: 0)
            let message = try BroadcastCodec.decode(framed: bytes, surfaces: .init(count: 1, size: UInt64(Self.size)))
            if case .release = message { continue }
            return message
        }
    }

    func picture(time: Int64, additions: BroadcastMessage.VideoFrame.Additions?) -> BroadcastMessage {
        .video(.init(surface: 0, matrix: .bt601, range: .video, width: 64, height: 32, planes: [
            .init(offset: 0, stride: 64, rows: 32), .init(offset: 2048, stride: 32, rows: 16), .init(offset: 2560, stride: 32, rows: 16),
        ], time: time, additions: additions))
    }

    /// Ends the broadcast and awaits the kit's loop returning (false if it did not within 30 s).
    func finish() async throws -> Bool {
        try send(.finished)
        return await done.happened(within: 30)
    }
}

/// The kit's session loop itself, with replayd played over a socketpair.
@Suite struct KitSessionTests {
    /// The minor version the kit answers `ready` with: none to a 1.0 replayd (which names
    /// none), else the lower of replayd's and its own.
    @Test(arguments: [(UInt16?.none, UInt16?.none), (UInt16?(1), UInt16?(1)), (UInt16?(7), UInt16?(BroadcastCodec.minorVersion))]
          as [(UInt16?, UInt16?)])
    func readyNamesTheMinorVersionBothSidesSpeak(announced: UInt16?, expected: UInt16?) async throws {
        let replayd = try FakeReplayd(handler: NotingHandler(), announcedMinorVersion: announced)
        #expect(try replayd.receive() == .ready(minorVersion: expected))
        #expect(try await replayd.finish())
    }

    /// 1.1's repeat flag and drop count reach the handler; a 1.0 picture is not a repeat.
    @Test func repeatsAndDropsReachTheHandler() async throws {
        let handler = NotingHandler()
        let replayd = try FakeReplayd(handler: handler, announcedMinorVersion: 1)
        #expect(try replayd.receive() == .ready(minorVersion: 1))
        try replayd.send(.started(setupInfo: [:]))
        try replayd.send(replayd.picture(time: 1, additions: .init(isRepeat: false, framesDropped: 0)))
        try replayd.send(replayd.picture(time: 2, additions: .init(isRepeat: true, framesDropped: 3)))
        try replayd.send(replayd.picture(time: 3, additions: .init(isRepeat: false, framesDropped: 3)))
        try replayd.send(replayd.picture(time: 4, additions: nil))
        #expect(try await replayd.finish())
        #expect(replayd.failure.withLock { $0 } == nil)
        #expect(handler.notes.withLock { $0.events } == ["started", "picture", "dropped 3 of 3", "repeat", "picture", "picture", "finished"])
    }

    /// With no sample at all (a still screen), the ticks the handler asked for come, and the
    /// heartbeat is still answered between them; none after `finished`.
    @Test func ticksComeWithoutSamples() async throws {
        let handler = NotingHandler(interval: .milliseconds(20))
        let replayd = try FakeReplayd(handler: handler, announcedMinorVersion: 1)
        #expect(try replayd.receive() == .ready(minorVersion: 1))
        try replayd.send(.started(setupInfo: [:]))
        for tick in 1...3 { try #require(await handler.ticked.happened(within: 30), "tick \(tick) never came") }
        try replayd.send(.ping(9))
        #expect(try replayd.receive() == .pong(9))
        #expect(try await replayd.finish())
        let ticks = handler.notes.withLock { $0.ticks }
        #expect(ticks.count >= 3)
        #expect(zip(ticks, ticks.dropFirst()).allSatisfy { $0 < $1 }, "\(ticks)")
        #expect(handler.notes.withLock { $0.events.last } == "finished")
        let count = ticks.count
        #expect(handler.notes.withLock { $0.ticks.count } == count)
    }
}
