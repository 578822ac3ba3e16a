import FoundationEssentials
import ReplayIPC
import ReplayMedia
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The extension process's side of the broadcast: an extension's `main` is one line,
/// `BroadcastExtension.run(MyHandler())`.
///
/// replayd starts the extension (sandboxed) with a SOCK_SEQPACKET socket as descriptor 3
/// (or `$OPENREPLAYKIT_BROADCAST_FD`). The first message is `hello`, carrying the shared
/// surfaces as read-only descriptors; every later message is checked against them by
/// `BroadcastCodec` before anything is touched.
public enum BroadcastExtension {
    /// Serves one broadcast with `handler`, on the calling thread, and exits the process when
    /// it is over: status 0 after `finished`, 3 (with the reason on standard error) when replayd
    /// broke the protocol or went away. Call it once, from `main`.
    public static func run(_ handler: BroadcastSampleHandler) -> Never {
        signal(SIGPIPE, SIG_IGN)
        let environment = ProcessInfo.processInfo.environment
        let fd = environment["OPENREPLAYKIT_BROADCAST_FD"].flatMap(Int32.init) ?? 3
        do {
            try serve(socket: fd, handler: handler,
                      announcedMinorVersion: environment[BroadcastCodec.minorVersionVariable].flatMap(UInt16.init))
            exit(0)
        } catch {
            StandardStreams.writeError("broadcast extension: \(error)\n")
            exit(3)
        }
    }

    /// Serves one broadcast on `socket` with `handler`, on the calling thread, until
    /// `finished`: `run` without the exit, for tests that play replayd's side.
    /// `announcedMinorVersion`: the minor version replayd named (nil: a 1.0 replayd, which
    /// names none).
    @_spi(OpenReplayKitInternal) public static func serve(socket: Int32, handler: BroadcastSampleHandler, announcedMinorVersion: UInt16?) throws {
        try Session(socket: socket, handler: handler, announcedMinorVersion: announcedMinorVersion).run()
    }

    /// Why the extension's side of the broadcast ends: replayd broke the protocol, or went away.
    @_spi(OpenReplayKitInternal) public struct Failure: Error, CustomStringConvertible {
        @_spi(OpenReplayKitInternal) public let description: String
        @_spi(OpenReplayKitInternal) public init(description: String) { self.description = description }
    }

    /// One broadcast, from `hello` to `finished`.
    private final class Session: BroadcastHost, @unchecked Sendable {
        // @unchecked: `surfaces` is written once before the loop; sends are serialised by `sendLock`.
        let socket: Int32
        let handler: BroadcastSampleHandler
        var surfaces: [SharedSurface] = []
        var limits = BroadcastCodec.Surfaces.none
        let sendLock = Mutex(())
        /// Set once the handler has called `finishBroadcast(error:)`: from then on it hears
        /// only `broadcastFinished`.
        let finishing = Atomic<Bool>(false)
        /// From `started` on, until the broadcast ends: when ticks may come.
        var isLive = false
        var tickClock = TickClock()
        var drops = DropCounter()

        let announcedMinorVersion: UInt16?

        init(socket: Int32, handler: BroadcastSampleHandler, announcedMinorVersion: UInt16?) {
            self.socket = socket
            self.handler = handler
            self.announcedMinorVersion = announcedMinorVersion
        }

        func send(_ message: BroadcastMessage) {
            if case .finish = message { finishing.store(true, ordering: .releasing) }
            sendLock.withLock { _ in try? DescriptorPassing.send(socket: socket, bytes: BroadcastCodec.encode(message), descriptors: []) }
        }

        func run() throws {
            handler.host = self
            try receiveHello()
            // 1.1 on: the minor version, when replayd announced one, at most ours.
            send(.ready(minorVersion: announcedMinorVersion.map { min($0, BroadcastCodec.minorVersion) }))
            while true {
                guard try waitForMessage() else { continue }
                let (bytes, descriptors) = try DescriptorPassing.receive(socket: socket, maxBytes: BroadcastCodec.maxFramedMessage,
                                                                          maxDescriptors: 0)
                descriptors.forEach { close($0) }
                guard !bytes.isEmpty else { throw Failure(description: "replayd closed the connection") }
                let message = try BroadcastCodec.decode(framed: bytes, surfaces: limits)
                if try dispatch(message) { return }
            }
        }

        /// Delivers the ticks that are due, and waits for the next message until the next tick
        /// is due: true when a message is there to read.
        private func waitForMessage() throws -> Bool {
            guard isLive, !finishing.load(ordering: .acquiring) else { return true }
            var now = MonotonicClock.nanoseconds()
            tickClock.refresh(handler.tickRequest, now: now)
            if let due = tickClock.next, due <= now {
                handler.broadcastTick(at: MediaTime(nanoseconds: now))
                now = MonotonicClock.nanoseconds()
                tickClock.ticked(at: now)
                // The handler may have asked for another rhythm in its tick.
                tickClock.refresh(handler.tickRequest, now: now)
            }
            guard let due = tickClock.next else { return true }
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: max(0, (due - now + 999_999) / 1_000_000))
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 && errno != EINTR { throw Failure(description: "poll: errno \(errno)") }
            return ready > 0
        }

        private func receiveHello() throws {
            let (bytes, descriptors) = try DescriptorPassing.receive(socket: socket, maxBytes: 64, maxDescriptors: Int(BroadcastCodec.maxSurfaces))
            var mapped: [SharedSurface] = []
            do {
                guard case .hello(let hello) = try BroadcastCodec.decode(framed: bytes, surfaces: .none) else {
                    throw Failure(description: "the first message was not hello")
                }
                guard descriptors.count == Int(hello.surfaceCount) else {
                    throw Failure(description: "hello announced \(hello.surfaceCount) surfaces but carried \(descriptors.count)")
                }
                for (index, descriptor) in descriptors.enumerated() {
                    let surface = try SharedSurface.mapReadOnly(descriptor: descriptor)
                    mapped.append(surface)
                    guard UInt64(surface.size) >= hello.surfaceSize else {
                        throw Failure(description: "surface \(index) is smaller than announced")
                    }
                }
                surfaces = mapped
                limits = .init(count: hello.surfaceCount, size: hello.surfaceSize)
            } catch {
                for descriptor in descriptors.dropFirst(mapped.count) { close(descriptor) }
                throw error
            }
        }

        /// Hands one message to the handler; true once the broadcast is over.
        private func dispatch(_ message: BroadcastMessage) throws -> Bool {
            if finishing.load(ordering: .acquiring) {
                // The handler has ended the broadcast: samples go back unseen, and nothing but
                // `broadcastFinished` reaches it (ReplayKit's order).
                switch message {
                case .video(let frame): send(.release(surface: frame.surface))
                case .audio(let period): send(.release(surface: period.surface))
                case .started, .annotated, .paused, .resumed, .dropped: break
                default: return try dispatchInOrder(message)
                }
                return false
            }
            return try dispatchInOrder(message)
        }

        private func dispatchInOrder(_ message: BroadcastMessage) throws -> Bool {
            switch message {
            case .started(let setup):
                handler.broadcastStarted(setupInfo: setup)
                isLive = true
            case .annotated(let info): handler.broadcastAnnotated(applicationInfo: info)
            case .video(let frame):
                let sample = try picture(frame)
                if let dropped = drops.update(with: frame) { handler.broadcastDroppedFrames(dropped.count, total: dropped.total) }
                handler.processSampleBuffer(.video(sample))
            case .audio(let period):
                let buffer = audio(period)
                send(.release(surface: period.surface))
                handler.processSampleBuffer(.audio(buffer))
            case .paused: handler.broadcastPaused()
            case .resumed: handler.broadcastResumed()
            case .finished:
                isLive = false
                handler.broadcastFinished()
                return true
            case .ping(let sequence): send(.pong(sequence))
            case .dropped(let total):
                if let dropped = drops.update(total: Int(total)) { handler.broadcastDroppedFrames(dropped.count, total: dropped.total) }
            case .hello, .ready, .pong, .release, .finish, .serviceInfo, .broadcastURL:
                throw Failure(description: "unexpected message from replayd: \(message)")
            }
            return false
        }

        /// The picture in place in its surface: no copy. The surface goes back to replayd
        /// when the handler's last reference to the picture is gone.
        private func picture(_ frame: BroadcastMessage.VideoFrame) throws -> VideoSample {
            let index = frame.surface
            return try ReceivedPicture.sample(of: frame, in: surfaces[Int(index)].bytes) { [self] in send(.release(surface: index)) }
        }

        /// Audio is small: copied out of its surface at once, so the surface is free again.
        private func audio(_ period: BroadcastMessage.AudioPeriod) -> AudioBuffer {
            let surface = surfaces[Int(period.surface)]
            let count = Int(period.frames) * Int(period.channels)
            var samples = [Float](repeating: 0, count: count)
            samples.withUnsafeMutableBytes { destination in
                destination.copyMemory(from: UnsafeRawBufferPointer(
                    rebasing: surface.bytes[Int(period.offset)..<Int(period.offset) + count * 4]))
            }
            return AudioBuffer(source: period.source == .app ? .app : .microphone, time: MediaTime(nanoseconds: period.time),
                               sampleRate: Int(period.sampleRate), channels: Int(period.channels), samples: samples)
        }
    }
}
