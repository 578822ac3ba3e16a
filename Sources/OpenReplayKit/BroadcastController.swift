import FoundationEssentials
import ReplayIPC
import Synchronization

/// The host app's side of a live broadcast, as ReplayKit's RPBroadcastController: it asks
/// replayd to show the person the broadcast picker, then follows the broadcast the person
/// started there, and may pause, resume or finish it. It never receives a sample: the
/// screen goes from replayd to the upload extension only.
///
/// Its async calls connect without blocking their caller's thread; a task cancelled while
/// connecting returns at once (`cancelled`). Once connected, the daemon's answer is awaited:
/// it comes at once, and closing this connection would end an app's broadcast.
public final class BroadcastController: Sendable {
    private struct State {
        /// Replies wait in its inbox; broadcast updates go to the subscribers instead.
        var connection: DaemonConnection?
        var status: BroadcastStatus?
        var subscribers: [UUID: AsyncStream<BroadcastStatus>.Continuation] = [:]
    }

    private let endpoint: DaemonEndpoint
    private let state = Mutex(State())

    public init(socket: String? = nil) {
        endpoint = .socket(socket)
    }

    /// A controller whose connection is a socket `connect` hands out (the SDK's tests).
    @_spi(OpenReplayKitInternal) public init(connect: @escaping @Sendable () throws -> Int32) {
        endpoint = .connector(connect)
    }

    /// The broadcast's latest state, once the person started one.
    public var status: BroadcastStatus? { state.withLock { $0.status } }
    public var isBroadcasting: Bool { status.map { $0.state == .live || $0.state == .paused } ?? false }
    public var isPaused: Bool { status?.state == .paused }
    /// What the extension tells the host app (viewers, health…).
    public var serviceInfo: [String: String] { status?.serviceInfo ?? [:] }
    public var broadcastURL: String? { status?.broadcastURL }
    /// Why the broadcast ended, if it failed (extension crashed, over its memory, …).
    public var error: String? { status?.lastError }

    /// Each change of the broadcast: started, paused, resumed, service info, URL, ended.
    public func updates() -> AsyncStream<BroadcastStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: BroadcastStatus.self)
        let id = UUID()
        state.withLock { state in
            state.subscribers[id] = continuation
            if let status = state.status { continuation.yield(status) }
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) } }
        return stream
    }

    /// Asks replayd to show the person the picker, narrowed to `preferredExtension` if given
    /// (ReplayKit's preferredExtension). Returns once it is shown; the person may start a
    /// broadcast there, or not.
    /// - Parameter scope: `.screen` (the default) broadcasts the whole screen; `.app` only
    ///   this app's own windows, everything else black, as in-app capture (ReplayKit's
    ///   in-app broadcast, a call's screen share of the app). The picker tells the person which.
    ///   The broadcast of the app's own windows ends when this controller's connection does
    ///   (the app quits).
    /// - Parameter setup: fills in `preferredExtension`'s settings that are not secret (a
    ///   call's server and room); the person sees them and may change them, and types any
    ///   secret (a room's pin) there. A daemon older than 2.2 shows the picker without them.
    public func showPicker(preferredExtension: String? = nil, microphone: Bool = false,
                           scope: BroadcastScope = .screen, setup: [String: String] = [:]) async throws(RecordingError) {
        guard let wireScope = ReplayIPC.BroadcastScope(rawValue: scope.rawValue) else {
            throw RecordingError(.unsupported, "this SDK cannot ask for a broadcast of scope '\(scope)'")
        }
        try await connection().ask(.showBroadcastPicker(preferredExtension: preferredExtension, microphone: microphone, scope: wireScope,
                                                        setup: setup.isEmpty ? nil : setup),
                                   failure: .failedToShowPreview, cancellable: false) { if case .pickerShown = $0 { true } else { false } }
    }

    public func pause() async throws(RecordingError) { try await control { .pauseBroadcast(id: $0) } }
    public func resume() async throws(RecordingError) { try await control { .resumeBroadcast(id: $0) } }
    /// Ends the broadcast; the extension finishes its upload.
    public func finish() async throws(RecordingError) { try await control { .stopBroadcast(id: $0) } }

    private func control(_ make: (String?) -> ClientRequest) async throws(RecordingError) {
        guard let id = status?.id, isBroadcasting else {
            throw RecordingError(.attemptToStopNonRecording, "no broadcast started from this app is running")
        }
        try await connection().ask(make(id), failure: .interrupted, cancellable: false) { if case .broadcasts = $0 { true } else { false } }
    }

    /// Hangs up, which ends a broadcast of the app's own windows; the updates' streams finish
    /// (the C library's `ork_client_free`).
    @_spi(OpenReplayKitInternal) public func close() {
        let (connection, subscribers) = state.withLock { state in
            defer { state.subscribers = [:] }
            return (state.connection, Array(state.subscribers.values))
        }
        connection?.link.close()
        for subscriber in subscribers { subscriber.finish() }
    }

    /// One long-lived connection: the daemon sends the broadcast's updates on it.
    private func connection() async throws(RecordingError) -> DaemonConnection {
        if let open = state.withLock({ $0.connection }) { return open }
        let opened = DaemonConnection(link: try await DaemonLink.open(endpoint), inbox: EventInbox())
        let connection = state.withLock { state in
            if let raced = state.connection { return raced }
            state.connection = opened
            return opened
        }
        guard connection.link === opened.link else {
            opened.link.close()
            return connection
        }
        connection.link.startReading { [weak self] event, body in self?.receive(event, body, replies: connection.inbox) }
        return connection
    }

    private func receive(_ event: DaemonEvent?, _ body: [UInt8], replies: EventInbox) {
        guard case .broadcastUpdated(let update) = event else {
            if event == nil { state.withLock { $0.connection = nil } }
            replies.push(event, body)
            return
        }
        let status = BroadcastStatus(update)
        state.withLock { state in
            state.status = status
            for subscriber in state.subscribers.values { subscriber.yield(status) }
        }
    }
}
