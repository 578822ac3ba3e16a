@_spi(OpenReplayKitInternal) import OpenReplayKit
import Synchronization

/// What one `ork_client` holds: the SDK's objects, the callback thread, and what runs.
final class Client: Sendable {
    /// The watchers that feed callbacks: each a task reading an SDK stream, and per kind a
    /// generation that a queued callback checks before it runs (so none runs after its
    /// watcher was replaced or stopped).
    struct Watchers {
        var tasks: [CallbackKind: Task<Void, Never>] = [:]
        var generations: [CallbackKind: Int] = [:]
    }

    let recorder: ScreenRecorder
    let captureState: CaptureState
    let broadcast: BroadcastController
    let callbacks = CallbackThread()
    let watchers = Mutex(Watchers())
    /// A token for C: the handle this client is known by.
    let handle = Mutex<UInt>(0)

    init(socket: String?) {
        recorder = ScreenRecorder(socket: socket)
        captureState = CaptureState(socket: socket)
        broadcast = BroadcastController(socket: socket)
    }

    var cHandle: OpaquePointer? { OpaquePointer(bitPattern: handle.withLock { $0 }) }

    /// Starts a new generation of `kind`'s callbacks, fed by no task yet: calls queued before
    /// will not be made, and one running now has returned (unless this is called from a
    /// callback). Returns the new generation.
    @discardableResult
    func replace(_ kind: CallbackKind) -> Int {
        let (previous, generation) = watchers.withLock { watchers in
            let previous = watchers.tasks.removeValue(forKey: kind)
            let generation = (watchers.generations[kind] ?? 0) + 1
            watchers.generations[kind] = generation
            return (previous, generation)
        }
        previous?.cancel()
        callbacks.cancel(kind)
        return generation
    }

    /// Makes `task` the feeder of `generation`; cancels it when another generation came meanwhile.
    func install(_ kind: CallbackKind, _ generation: Int, _ task: Task<Void, Never>) {
        let installed = watchers.withLock { watchers in
            guard watchers.generations[kind] == generation else { return false }
            watchers.tasks[kind] = task
            return true
        }
        if !installed { task.cancel() }
    }

    func isCurrent(_ kind: CallbackKind, _ generation: Int) -> Bool { watchers.withLock { $0.generations[kind] == generation } }

    /// Calls `body` on the callback thread, if `kind`'s generation is still `generation` then.
    func post(_ kind: CallbackKind, _ generation: Int, _ body: @escaping @Sendable (OpaquePointer?) -> Void) {
        callbacks.post(kind) { [self] in
            if isCurrent(kind, generation) { body(cHandle) }
        }
    }

    /// Ends everything the client runs, as `ork_client_free` says.
    func close() {
        let tasks = watchers.withLock { watchers in
            defer { watchers.tasks = [:] }
            return Array(watchers.tasks.values)
        }
        for task in tasks { task.cancel() }
        callbacks.stop()
        let recorder = self.recorder
        // Each ends what runs, or says it was not running; both are fine here.
        _ = try? runBlocking { () async throws(RecordingError) in try await recorder.stopCapture() }
        _ = try? runBlocking { () async throws(RecordingError) in try await recorder.stopClipBuffering() }
        if recorder.isRecording {
            _ = try? runBlocking { () async throws(RecordingError) in try await recorder.stopRecording() }
        }
        recorder.closeControl()
        captureState.close()
        broadcast.close()
    }
}
