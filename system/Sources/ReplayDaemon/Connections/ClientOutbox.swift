import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import ReplayCaptureModel
import ReplayIPC
import Synchronization

/// What replayd sends one client, queued without ever blocking the sender.
///
/// Events are written by the connection's event loop as the client reads them. The queue
/// is bounded in bytes: a client that stops reading is disconnected once its events fill
/// it, so it can neither stall capture nor grow the daemon's memory. Bulk data (export
/// chunks, in-app capture pictures) asks for room first instead, and goes with `sendBulk`:
/// its sender bounds it, so it never cuts a client off, whatever its size (an 8K picture is
/// 47 MiB), and an event queued behind it is not counted against its bytes.
public final class ClientOutbox: Sendable {
    /// Queued bytes past which a client that does not read is cut off.
    public static let defaultLimit = 8 << 20

    private let channel: any Channel
    private let limit: Int
    private let pending = Atomic<Int>(0)
    /// The part of `pending` that is bulk data.
    private let pendingBulk = Atomic<Int>(0)
    /// Bulk senders waiting for the queue to drain below their mark.
    private let roomWaiters = Mutex<[(below: Int, handler: @Sendable (Bool) -> Void)]>([])
    private let closed = Atomic<Bool>(false)
    /// The most recent write: a close waits for it, so a last error still reaches the client.
    private let lastWrite = Mutex<EventLoopFuture<Void>?>(nil)

    init(channel: any Channel, limit: Int = ClientOutbox.defaultLimit) {
        self.channel = channel
        self.limit = limit
    }

    /// Bytes written but not yet taken by the client's socket.
    public var pendingBytes: Int { pending.load(ordering: .relaxed) }
    public var isClosed: Bool { closed.load(ordering: .acquiring) || !channel.isActive }

    /// Runs `body` once the connection has closed (the client hung up, or was cut off), even
    /// while its requests wait for something else.
    public func whenClosed(_ body: @escaping @Sendable () -> Void) {
        channel.closeFuture.whenComplete { _ in body() }
    }

    public func send<M: Encodable>(_ message: M, body: [UInt8] = []) throws {
        try body.withUnsafeBytes { try send(message, body: $0) }
    }

    /// Queues one framed message; throws, and closes the connection, when the client has let
    /// its events fill the queue.
    public func send<M: Encodable>(_ message: M, body: UnsafeRawBufferPointer) throws {
        try enqueue(message, body: body, bulk: false)
    }

    /// Queues bulk data whose sender asked for room first (`hasRoom`, `room(below:)`): it
    /// never cuts the client off, and events behind it still have the whole limit.
    public func sendBulk<M: Encodable>(_ message: M, body: UnsafeRawBufferPointer) throws {
        try enqueue(message, body: body, bulk: true)
    }

    private func enqueue<M: Encodable>(_ message: M, body: UnsafeRawBufferPointer, bulk: Bool) throws {
        let head = try FrameCodec.frameHead(message, bodyLength: body.count)
        let size = head.count + body.count
        guard !isClosed else { throw DaemonError(code: .internalError, message: "the client's connection is closed") }
        let queued = pending.add(size, ordering: .relaxed).newValue
        if bulk {
            pendingBulk.add(size, ordering: .relaxed)
        } else if queued - pendingBulk.load(ordering: .relaxed) > limit {
            pending.subtract(size, ordering: .relaxed)
            close()
            throw DaemonError(code: .busy, message: "the client did not read its events (\(limit >> 10) KiB queued); it was disconnected")
        }
        var buffer = channel.allocator.buffer(capacity: size)
        buffer.writeBytes(head)
        buffer.writeBytes(body)
        let written = lastWrite.withLock { last in
            let written = channel.writeAndFlush(buffer)
            last = written
            return written
        }
        written.whenComplete { [self] _ in
            if bulk { pendingBulk.subtract(size, ordering: .relaxed) }
            pending.subtract(size, ordering: .relaxed)
            wakeRoomWaiters()
        }
    }

    /// True when at most `bytes` are still queued: bulk senders check before sending.
    public func hasRoom(below bytes: Int) -> Bool { pendingBytes < bytes }

    /// Calls `handler` once fewer than `bytes` are queued (at once if so) with true, or once the
    /// connection has closed with false. No thread waits: it runs when a write completes, on
    /// the connection's event loop, so long work goes elsewhere.
    public func whenRoom(below bytes: Int, _ handler: @escaping @Sendable (Bool) -> Void) {
        roomWaiters.withLock { $0.append((bytes, handler)) }
        wakeRoomWaiters()
    }

    /// True once fewer than `bytes` are queued, false once the connection has closed: a bulk
    /// sender's task awaits it, holding no thread.
    func room(below bytes: Int) async throws -> Bool {
        try await awaitAnswer { whenRoom(below: bytes, $0) }
    }

    /// Returns once what was queued so far has been written, or has failed (the client gone).
    func written() async {
        guard let last = lastWrite.withLock({ $0 }) else { return }
        _ = try? await last.get()
    }

    private func wakeRoomWaiters() {
        let closed = isClosed
        let ready = roomWaiters.withLock { waiters -> [(room: Bool, handler: @Sendable (Bool) -> Void)] in
            var ready: [(room: Bool, handler: @Sendable (Bool) -> Void)] = []
            waiters.removeAll { waiter in
                guard closed || pendingBytes < waiter.below else { return false }
                ready.append((!closed, waiter.handler))
                return true
            }
            return ready
        }
        for (room, handler) in ready { handler(room) }
    }

    /// Closes the connection once what is queued is written (a protocol error's last word).
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let channel = self.channel
        if let last = lastWrite.withLock({ $0 }) {
            last.whenComplete { _ in channel.close(promise: nil) }
        } else {
            channel.close(promise: nil)
        }
        wakeRoomWaiters()
    }
}
