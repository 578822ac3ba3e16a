public import Foundation
public import Logging
import ReplayIPC
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// replayd: owns capture, accepts clients on a Unix socket, one thread per connection.
public final class Daemon: Sendable {
    public struct Configuration: Sendable {
        public var socketPath: String
        public var store: URL
        /// The X display to capture; nil uses `$DISPLAY` when a recording starts.
        public var displayName: String?
        /// Exit after this long with no client and no recording (for daemons started on demand).
        public var idleExit: Duration?

        public init(socketPath: String, store: URL, displayName: String?, idleExit: Duration? = nil) {
            self.socketPath = socketPath
            self.store = store
            self.displayName = displayName
            self.idleExit = idleExit
        }
    }

    let configuration: Configuration
    let store: RecordingStore
    let logger: Logger
    private let listener: Int32
    private let state = Mutex(State())

    private struct State {
        var sessions: [String: RecordingSession] = [:]
        var connections = 0
        var lastActivity = MonotonicClock.nanoseconds()
        var stopping = false
    }

    /// Opens the store and binds the socket; after this, clients can connect.
    public init(configuration: Configuration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        store = try RecordingStore(directory: configuration.store)
        let socketDirectory = URL(fileURLWithPath: configuration.socketPath).deletingLastPathComponent()
        try ReplayPaths.makePrivateDirectory(socketDirectory)
        listener = try UnixSocket.listen(path: configuration.socketPath)
    }

    /// Serves clients until `shutdown()`.
    public func run() {
        logger.info("replayd listening", metadata: ["socket": "\(configuration.socketPath)", "store": "\(store.directory.path)"])
        if let idle = configuration.idleExit { watchIdleness(limit: idle) }
        while true {
            let fd: Int32
            do {
                fd = try UnixSocket.accept(listener)
            } catch {
                if state.withLock({ $0.stopping }) { break }
                logger.warning("accept failed: \(error)")
                continue
            }
            let channel = MessageChannel(fd: fd, limits: .requests)
            state.withLock {
                $0.connections += 1
                $0.lastActivity = MonotonicClock.nanoseconds()
            }
            Thread.detachNewThread { [self] in
                ClientConnection(daemon: self, channel: channel).serve()
                state.withLock {
                    $0.connections -= 1
                    $0.lastActivity = MonotonicClock.nanoseconds()
                }
            }
        }
        logger.info("replayd stopped")
    }

    /// Stops accepting, ends every recording (keeping it) and returns when their files are closed.
    public func shutdown() {
        let sessions = state.withLock { state -> [RecordingSession] in
            state.stopping = true
            return Array(state.sessions.values)
        }
        logger.info("shutting down", metadata: ["recordings": "\(sessions.count)"])
        for session in sessions { session.stop() }
        for session in sessions { _ = session.waitUntilFinished() }
        unlink(configuration.socketPath)
        // Give each recording's client a moment to receive its summary and hang up.
        let deadline = MonotonicClock.nanoseconds() + 2_000_000_000
        while !sessions.isEmpty && state.withLock({ $0.connections > 0 }) && MonotonicClock.nanoseconds() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
    }

    func register(_ session: RecordingSession) -> Bool {
        state.withLock { state in
            guard !state.stopping else { return false }
            state.sessions[session.id] = session
            return true
        }
    }

    func unregister(_ session: RecordingSession) {
        state.withLock {
            $0.sessions[session.id] = nil
            $0.lastActivity = MonotonicClock.nanoseconds()
        }
    }

    var activeRecordings: [String] { state.withLock { Array($0.sessions.keys).sorted() } }

    private func watchIdleness(limit: Duration) {
        let limitNanoseconds = limit.components.seconds * 1_000_000_000
        Thread.detachNewThread { [self] in
            while true {
                Thread.sleep(forTimeInterval: 1)
                let idle = state.withLock { state in
                    state.connections == 0 && state.sessions.isEmpty && !state.stopping
                        && MonotonicClock.nanoseconds() - state.lastActivity > limitNanoseconds
                }
                if idle {
                    logger.info("idle for \(limit), exiting")
                    shutdown()
                    return
                }
            }
        }
    }
}
