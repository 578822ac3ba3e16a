#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ReplayIPC
import ReplaySystem
import Synchronization

/// replayd as the SDK sees it, scripted: every connection the SDK makes is a socket pair whose
/// other end the next script serves, on a thread of its own. A script throws `Unexpected` when
/// the SDK does something else than it expects; `finish()` collects what went wrong.
final class FakeDaemon: Sendable {
    typealias Script = @Sendable (Peer) throws -> Void

    private struct State {
        var scripts: [Script]
        var connections = 0
        var failures: [String] = []
    }

    private let state: Mutex<State>
    private let running = DispatchGroup()

    init(_ scripts: Script...) {
        state = Mutex(State(scripts: scripts))
    }

    /// What the SDK's `connect:` initialisers take.
    var connect: @Sendable () throws -> Int32 { { [self] in try accept() } }

    /// How many connections the SDK made.
    var connections: Int { state.withLock { $0.connections } }

    private func accept() throws -> Int32 {
        var fds: [Int32] = [0, 0]
        try syscall("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) }
        let script = state.withLock { state -> Script? in
            state.connections += 1
            return state.scripts.isEmpty ? nil : state.scripts.removeFirst()
        }
        let peer = Peer(fd: fds[1])
        running.enter()
        Thread.detachNewThread { [self] in
            defer { running.leave() }
            do {
                guard let script else { throw Unexpected("a connection no script was written for") }
                try script(peer)
            } catch {
                state.withLock { $0.failures.append("\(error)") }
            }
            peer.channel.close()
        }
        return fds[0]
    }

    /// Waits for every script to end (each has its own backstop) and returns what went wrong.
    func finish() -> [String] {
        if running.wait(timeout: .now() + 60) == .timedOut {
            state.withLock { $0.failures.append("a script never ended") }
        }
        return state.withLock { $0.failures }
    }
}

struct Unexpected: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The daemon's end of one connection.
final class Peer: Sendable {
    let channel: MessageChannel
    private let fd: Int32

    init(fd: Int32) {
        self.fd = fd
        channel = MessageChannel(fd: fd, limits: .requests)
    }

    /// The SDK's next request; nil when it hung up. Waits at most `backstop` seconds (a test
    /// that fails must not hang), after which it throws.
    func receive(backstop: Int32 = 30_000) throws -> ClientRequest? {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, backstop) == 1 else { throw Unexpected("the SDK sent nothing and kept the connection open") }
        return try channel.receive(ClientRequest.self)?.message
    }

    /// Reads the hello and welcomes it as replayd 2.1 does; returns the hello.
    @discardableResult
    func welcome(version: Int = ClientProtocol.version) throws -> ClientRequest {
        guard let hello = try receive(), case .hello = hello else { throw Unexpected("the first message was not a hello") }
        send(.welcome(protocolVersion: version, daemonPID: 4242, minorVersion: ClientProtocol.minorVersion,
                      capabilities: ClientProtocol.daemonCapabilities.map(\.rawValue)))
        return hello
    }

    func expect(_ name: String) throws -> ClientRequest {
        guard let request = try receive() else { throw Unexpected("the SDK hung up instead of sending \(name)") }
        guard request.name == name else { throw Unexpected("the SDK sent \(request.name) instead of \(name)") }
        return request
    }

    func send(_ event: DaemonEvent, body: [UInt8] = []) {
        try? channel.send(event, body: body)
    }

    /// A frame as a later daemon might send it.
    func sendRaw(json: String, body: [UInt8] = []) {
        let bytes = FrameCodec.encodeHeader(jsonLength: json.utf8.count, bodyLength: body.count) + Array(json.utf8) + body
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Throws unless the SDK closes the connection (within the backstop) without sending more.
    func expectHangUp() throws {
        if let request = try receive() { throw Unexpected("the SDK sent \(request.name) instead of hanging up") }
    }
}

/// Raised once, awaited by a test: a point a script has reached.
final class Flag: Sendable {
    private struct State {
        var raised = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    func raise() {
        let waiters = state.withLock { state in
            state.raised = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// For a script's thread; gives up after a minute (a failing test must not hang).
    func waitBlocking() {
        for _ in 0..<60_000 where !state.withLock({ $0.raised }) { usleep(1000) }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if !state.raised { state.waiters.append(continuation) }
                return state.raised
            }
            if now { continuation.resume() }
        }
    }
}
