#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Synchronization
public import ReplaySystem

/// One end of a connection: sends and receives framed JSON messages (`FrameCodec`).
///
/// Sending is safe from several threads (a lock keeps frames whole); receiving is done
/// by one reader at a time.
public final class MessageChannel: Sendable {
    private let fd: Int32
    private let limits: FrameCodec.Limits
    private let writeLock = Mutex(())
    private let closed = Atomic<Bool>(false)
    private let welcomed = Mutex<ClientProtocol.Welcome?>(nil)

    /// Takes ownership of a connected socket.
    public init(fd: Int32, limits: FrameCodec.Limits) {
        self.fd = fd
        self.limits = limits
    }

    /// The process on the other end, from the kernel.
    public func peer(executableOf: (Int32) -> String? = PeerIdentity.executable(of:)) throws(SystemError) -> PeerIdentity {
        try PeerIdentity(socket: fd, executableOf: executableOf)
    }

    /// Connects to replayd at `path` and says hello (`handshake`): the channel returned has
    /// been welcomed. Throws `SystemError` when nothing listens at `path`, `HandshakeError`
    /// when the daemon does not welcome this client (another protocol version, too many
    /// connections, no answer). `client` names the program in the daemon's log.
    public static func connect(path: String, client: String = ClientProtocol.defaultClientName) throws -> MessageChannel {
        let channel = MessageChannel(fd: try UnixSocket.connect(path: path), limits: .events)
        try channel.requireTrustedDaemon(path: path)
        try channel.handshake(client: client)
        return channel
    }

    /// Before anything is sent (a stream key, a request): the process listening must be this
    /// user's own, or the system daemon's user `replayd`, by what the kernel says of it. A
    /// socket another user put in our way gets nothing.
    @_spi(OpenReplayKitInternal) public func requireTrustedDaemon(path: String) throws(HandshakeError) {
        let daemon: PeerIdentity
        do {
            daemon = try peer(executableOf: { _ in nil })
        } catch {
            throw .failed("cannot tell who listens on \(path): \(error)")
        }
        let trusted = [getuid(), ServiceUser(named: "replayd")?.uid].compactMap { $0 }
        guard trusted.contains(daemon.uid) else {
            throw .failed("\(path) is served by a process of uid \(daemon.uid), neither you nor replayd; nothing was sent to it")
        }
    }

    /// What the daemon said in its `welcome`, once `handshake` has succeeded: its minor version
    /// and capabilities (docs/protocol.md, "Growth").
    public var welcome: ClientProtocol.Welcome? { welcomed.withLock { $0 } }

    /// Sends `hello` (this side's version, minor version and capabilities) and waits (at most
    /// `timeout` seconds) for the daemon's `welcome`; returns the daemon's pid. A daemon of the
    /// same major version is welcome whatever its minor version. `connect(path:client:)` calls
    /// it; a channel made from a descriptor calls it itself before any request.
    @discardableResult
    public func handshake(client: String, timeout: Double = 10) throws(HandshakeError) -> Int32 {
        // A daemon that refuses at once (too many connections) may have closed already: its
        // error is still there to read, so a failed send is not the end.
        let sendError: (any Error)?
        do {
            try send(ClientProtocol.hello(client: client))
            sendError = nil
        } catch {
            sendError = error
        }
        let answer: (message: DaemonEvent, body: [UInt8])?
        do {
            setReceiveTimeout(timeout)
            defer { setReceiveTimeout(0) }
            answer = try receive(DaemonEvent.self, limits: .handshake)
        } catch ProtocolError.protocol1Peer {
            throw .versionMismatch(ClientProtocol.mismatch(daemon: 1, client: ClientProtocol.version))
        } catch let error as SystemError where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
            throw .failed("replayd did not answer hello within \(Int(timeout)) s")
        } catch {
            throw .failed("\(sendError ?? error)")
        }
        switch answer?.message {
        case .welcome(let version, let pid, let minor, let capabilities)?:
            guard version == ClientProtocol.version else {
                throw .versionMismatch(ClientProtocol.mismatch(daemon: version, client: ClientProtocol.version))
            }
            welcomed.withLock {
                $0 = ClientProtocol.Welcome(daemonPID: pid, minorVersion: max(0, minor ?? 0),
                                            capabilities: Set((capabilities ?? []).map(ClientProtocol.Capability.init(rawValue:))))
            }
            return pid
        case .error(.protocolVersionMismatch, let message)?: throw .versionMismatch(message)
        case .error(let code, let message)?: throw .refused(code: code, message: message)
        case let other?: throw .failed("replayd answered hello with \(other)")
        case nil: throw .failed(sendError.map { "\($0)" } ?? "replayd closed the connection")
        }
    }

    private func setReceiveTimeout(_ seconds: Double) {
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    public func send<M: Encodable>(_ message: M, body: [UInt8] = []) throws {
        try body.withUnsafeBytes { try send(message, body: $0) }
    }

    /// Sends `body` from where it lies (a 3 MB picture is not copied into the frame first).
    public func send<M: Encodable>(_ message: M, body: UnsafeRawBufferPointer) throws {
        let head = try FrameCodec.frameHead(message, bodyLength: body.count)
        try writeLock.withLock { _ in
            try head.withUnsafeBytes { try sendAll($0) }
            try sendAll(body)
        }
    }

    private func sendAll(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let base = bytes.baseAddress! + offset  // never nil: the loop runs only for a non-empty buffer
            let remaining = bytes.count - offset
            offset += try syscall("send") { Glibc.send(fd, base, remaining, Int32(MSG_NOSIGNAL)) }
        }
    }

    /// The next message, or nil when the peer closed the connection between messages. A
    /// well-formed message of a name this side does not know (a later minor version's) is
    /// skipped, body and all (docs/protocol.md, "Growth").
    public func receive<M: Decodable>(_ type: M.Type) throws -> (message: M, body: [UInt8])? {
        try receive(type, limits: limits)
    }

    private func receive<M: Decodable>(_ type: M.Type, limits: FrameCodec.Limits) throws -> (message: M, body: [UInt8])? {
        while true {
            guard let header = try readExactly(FrameCodec.headerSize, allowEOF: true) else { return nil }
            let lengths = try FrameCodec.decodeHeader(header, limits: limits)
            guard let json = try readExactly(lengths.json, allowEOF: false) else { throw ProtocolError.truncated }
            let body = lengths.body > 0 ? try readExactly(lengths.body, allowEOF: false) ?? [] : []
            switch try ClientProtocol.decode(M.self, from: json) {
            case .message(let message): return (message, body)
            case .unknown: continue
            }
        }
    }

    /// Wakes a blocked reader and refuses further traffic; the descriptor is released in deinit.
    public func close() {
        if !closed.exchange(true, ordering: .acquiringAndReleasing) {
            shutdown(fd, Int32(SHUT_RDWR))
        }
    }

    deinit { Glibc.close(fd) }

    private func readExactly(_ count: Int, allowEOF: Bool) throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = try buffer.withUnsafeMutableBytes { raw in
                try syscall("recv") { recv(fd, raw.baseAddress! + filled, count - filled, 0) }  // never nil: count > 0 here
            }
            if n == 0 {
                if filled == 0 && allowEOF { return nil }
                throw ProtocolError.truncated
            }
            filled += n
        }
        return buffer
    }
}

extension ClientProtocol {
    /// What a client says it is in its hello when it names nothing else: its program's name.
    public static var defaultClientName: String { ProcessInfo.processInfo.processName }
}
