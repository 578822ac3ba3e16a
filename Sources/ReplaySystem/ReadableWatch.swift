#if canImport(Glibc)
import Glibc
#endif
import CShims
import Dispatch
import Synchronization

/// Calls `whenReadable` each time a descriptor has something to read (a message, a pipe's
/// output, a pidfd's "exited"), on a serial queue, until cancelled; then `whenCancelled`,
/// after any call in progress and once the descriptor has left the watcher: that is where
/// the descriptor is closed, never before. No thread waits per watch meanwhile. It keeps
/// itself alive until cancelled, so a watch nobody else keeps still fires.
///
/// Not a dispatch read source: on Linux, libdispatch's epoll bookkeeping can free a
/// descriptor's record while its manager thread still holds an event for it, when sources
/// come and go on several threads at once (swift-corelibs-libdispatch issue 949; swift-subprocess
/// left dispatch sources for the same crash). replayd crashed so, in
/// `_dispatch_event_loop_drain`, about once in a hundred broadcasts ended by a crashing
/// extension. Here an event names its watch by a number looked up under a lock, so an event
/// for a watch that has gone is dropped, not followed.
public final class ReadableWatch: Sendable {
    private let descriptor: Int32
    private let number: UInt64
    private let queue: DispatchQueue
    /// Let go of once cancelled, as a dispatch source lets go of its handlers: whoever holds
    /// the watch is often what its handlers hold, and that cycle must end with the watch.
    private let handlers: Mutex<Handlers?>
    /// Set by `cancel()`: no more calls of `whenReadable`, and no re-arming.
    private let cancelling = Atomic(false)

    private struct Handlers {
        let readable: @Sendable (ReadableWatch) -> Void
        let cancelled: @Sendable () -> Void
    }

    public init(descriptor: Int32, label: String, whenCancelled: @escaping @Sendable () -> Void,
                whenReadable: @escaping @Sendable (ReadableWatch) -> Void) {
        self.descriptor = descriptor
        handlers = Mutex(Handlers(readable: whenReadable, cancelled: whenCancelled))
        queue = DispatchQueue(label: label)
        number = WatcherThread.shared.nextNumber()
        if !WatcherThread.shared.add(self, descriptor: descriptor, number: number) {
            // epoll refuses it (not a descriptor it can watch): the handler's own read then
            // says what is wrong, and it cancels, as at any error.
            fired()
        }
    }

    /// Stops watching; `whenCancelled` runs once, after any call of `whenReadable` in progress.
    public func cancel() {
        guard !cancelling.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            guard let handlers = handlers.withLock({ handlers in defer { handlers = nil }; return handlers }) else { return }
            WatcherThread.shared.remove(descriptor: descriptor, number: number)
            handlers.cancelled()
        }
    }

    /// The descriptor is readable (or hung up): its handler runs on the queue, then the watch
    /// is armed again for the next event, unless it was cancelled meanwhile.
    func fired() {
        queue.async { [self] in
            guard !cancelling.load(ordering: .acquiring), let readable = handlers.withLock({ $0?.readable }) else { return }
            readable(self)
            guard !cancelling.load(ordering: .acquiring) else { return }
            WatcherThread.shared.rearm(descriptor: descriptor, number: number)
        }
    }
}
