import Dispatch
import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayIPC
import ReplaySystem
@testable import ReplaySession
import Synchronization

/// An upload extension without a process: it answers the daemon as a well-behaved one
/// would (ready after hello, pong to every ping, surfaces released, exit on `finished`)
/// unless the test makes it crash, hang, bloat or talk nonsense.
final class FakeExtension: ExtensionLink, ExtensionHost, @unchecked Sendable {
    // @unchecked: all mutable state is behind `state`; deliveries go through one serial queue.
    struct Behaviour {
        var getsReady = true
        var answersPings = true
        var exitsOnFinished = true
        /// Gives up in `broadcastStarted` with this error (a refused stream key).
        var refusesStart: String?
        /// The extension protocol's minor version its `ready` announces (nil: a 1.0 extension).
        var minorVersion: UInt16?
        /// Keeps every picture it is given (never releases a video surface).
        var keepsPictures = false
    }

    let memoryCounting = "the fake's own footprint"
    let sandboxNetwork = "the fake's own"

    struct State {
        var behaviour: Behaviour
        var received: [BroadcastMessage] = []
        var surfaces = BroadcastCodec.Surfaces.none
        var listener: (@Sendable (ExtensionUtterance) -> Void)?
        var exitHandlers: [@Sendable (String) -> Void] = []
        var exited: String?
        var killed = false
        var closed = false
        var footprint = 10 << 20
        var launches = 0
        /// What the session let it connect to.
        var network: ExtensionNetworkPolicy?
    }

    private let state: Mutex<State>
    private let deliveries = DispatchQueue(label: "fake-extension")
    let exitedEvent = Completion<String>()

    init(_ behaviour: Behaviour = Behaviour()) { state = Mutex(State(behaviour: behaviour)) }

    func launch(_ manifest: ExtensionManifest, hidden: [String], writable: [String], network: ExtensionNetworkPolicy,
                redaction: SecretRedaction, started: @escaping @Sendable (Result<any ExtensionLink, DaemonError>) -> Void) {
        state.withLock {
            $0.launches += 1
            $0.network = network
        }
        started(.success(self))
    }

    var snapshot: State { state.withLock { $0 } }
    var received: [BroadcastMessage] { snapshot.received }
    func setFootprint(_ bytes: Int) { state.withLock { $0.footprint = bytes } }
    func change(_ change: (inout Behaviour) -> Void) { state.withLock { change(&$0.behaviour) } }

    // MARK: What the test makes it do

    func say(_ message: BroadcastMessage) { deliver(.message(BroadcastCodec.encode(message))) }
    func sayBytes(_ bytes: [UInt8]) { deliver(.message(bytes)) }

    /// Its connection closes and it is gone, the way a segfault ends it.
    func crash(_ how: String = "crashed (SIGSEGV)") {
        deliver(.closed)
        exit(how)
    }

    // MARK: ExtensionLink

    func send(_ bytes: [UInt8], descriptors: [Int32]) -> Bool {
        let surfaces = state.withLock { $0.surfaces }
        let message: BroadcastMessage
        do {
            message = try BroadcastCodec.decode(framed: bytes, surfaces: surfaces)
        } catch {
            return false
        }
        let (alive, behaviour) = state.withLock { state -> (Bool, Behaviour) in
            guard state.exited == nil && !state.closed else { return (false, state.behaviour) }
            state.received.append(message)
            if case .hello(let hello) = message {
                state.surfaces = BroadcastCodec.Surfaces(count: hello.surfaceCount, size: hello.surfaceSize)
            }
            return (true, state.behaviour)
        }
        guard alive else { return false }
        switch message {
        case .ping(let sequence) where behaviour.answersPings: say(.pong(sequence))
        case .video(let frame) where !behaviour.keepsPictures: say(.release(surface: frame.surface))
        case .audio(let period): say(.release(surface: period.surface))
        case .finished where behaviour.exitsOnFinished: exit("exited")
        case .started: if let error = behaviour.refusesStart { say(.finish(error: error)) }
        default: break
        }
        return true
    }

    func listen(_ handler: @escaping @Sendable (ExtensionUtterance) -> Void) {
        let (ready, minorVersion) = state.withLock { state in
            state.listener = handler
            return (state.behaviour.getsReady, state.behaviour.minorVersion)
        }
        if ready { say(.ready(minorVersion: minorVersion)) }
    }

    func usage() -> ExtensionUsage { ExtensionUsage(bytes: state.withLock { $0.footprint }, processes: 1) }

    /// As for a real process, killing one that already exited does nothing.
    func kill() {
        guard state.withLock({ state in
            if state.exited == nil { state.killed = true }
            return state.killed
        }) else { return }
        exit("crashed (SIGKILL)")
    }

    func onExit(_ handler: @escaping @Sendable (String) -> Void) {
        let exited = state.withLock { state -> String? in
            if state.exited == nil { state.exitHandlers.append(handler) }
            return state.exited
        }
        if let exited { deliveries.async { handler(exited) } }
    }

    func close() { state.withLock { $0.closed = true } }

    /// Returns once everything it has said so far has been heard (its deliveries are a queue).
    func heardSoFar() { deliveries.sync {} }

    private func deliver(_ utterance: ExtensionUtterance) {
        guard let listener = state.withLock({ $0.closed ? nil : $0.listener }) else { return }
        deliveries.async { listener(utterance) }
    }

    private func exit(_ how: String) {
        let handlers = state.withLock { state -> [@Sendable (String) -> Void] in
            guard state.exited == nil else { return [] }
            state.exited = how
            defer { state.exitHandlers = [] }
            return state.exitHandlers
        }
        deliveries.async { [self] in
            for handler in handlers { handler(how) }
            exitedEvent.complete(how)
        }
    }
}
