import Foundation
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
        let fd = ProcessInfo.processInfo.environment["OPENREPLAYKIT_BROADCAST_FD"].flatMap(Int32.init) ?? 3
        do {
            try Session(socket: fd, handler: handler).run()
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("broadcast extension: \(error)\n".utf8))
            exit(3)
        }
    }

    /// Why the extension's side of the broadcast ends: replayd broke the protocol, or went away.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        package init(description: String) { self.description = description }
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

        init(socket: Int32, handler: BroadcastSampleHandler) {
            self.socket = socket
            self.handler = handler
        }

        func send(_ message: BroadcastMessage) {
            if case .finish = message { finishing.store(true, ordering: .releasing) }
            sendLock.withLock { _ in try? DescriptorPassing.send(socket: socket, bytes: BroadcastCodec.encode(message), descriptors: []) }
        }

        func run() throws {
            handler.host = self
            try receiveHello()
            send(.ready)
            while true {
                let (bytes, descriptors) = try DescriptorPassing.receive(socket: socket, maxBytes: BroadcastCodec.maxFramedMessage,
                                                                          maxDescriptors: 0)
                descriptors.forEach { close($0) }
                guard !bytes.isEmpty else { throw Failure(description: "replayd closed the connection") }
                let message = try BroadcastCodec.decode(framed: bytes, surfaces: limits)
                if try dispatch(message) { return }
            }
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
                case .started, .annotated, .paused, .resumed: break
                default: return try dispatchInOrder(message)
                }
                return false
            }
            return try dispatchInOrder(message)
        }

        private func dispatchInOrder(_ message: BroadcastMessage) throws -> Bool {
            switch message {
            case .started(let setup): handler.broadcastStarted(setupInfo: setup)
            case .annotated(let info): handler.broadcastAnnotated(applicationInfo: info)
            case .video(let frame): handler.processSampleBuffer(.video(try picture(frame)))
            case .audio(let period):
                let buffer = audio(period)
                send(.release(surface: period.surface))
                handler.processSampleBuffer(.audio(buffer))
            case .paused: handler.broadcastPaused()
            case .resumed: handler.broadcastResumed()
            case .finished:
                handler.broadcastFinished()
                return true
            case .ping(let sequence): send(.pong(sequence))
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
