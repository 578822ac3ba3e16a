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
        number = DescriptorWatcher.shared.nextNumber()
        if !DescriptorWatcher.shared.add(self, descriptor: descriptor, number: number) {
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
            DescriptorWatcher.shared.remove(descriptor: descriptor, number: number)
            handlers.cancelled()
        }
    }

    /// The descriptor is readable (or hung up): its handler runs on the queue, then the watch
    /// is armed again for the next event, unless it was cancelled meanwhile.
    fileprivate func fired() {
        queue.async { [self] in
            guard !cancelling.load(ordering: .acquiring), let readable = handlers.withLock({ $0?.readable }) else { return }
            readable(self)
            guard !cancelling.load(ordering: .acquiring) else { return }
            DescriptorWatcher.shared.rearm(descriptor: descriptor, number: number)
        }
    }
}

/// One epoll instance and one thread for every `ReadableWatch` of the process. Each
/// descriptor is armed for one event at a time (EPOLLONESHOT): its handler runs, then it is
/// armed again, so a handler never runs twice at once and a level that stays readable is
/// not reported over and over meanwhile.
private final class DescriptorWatcher: Sendable {
    static let shared = DescriptorWatcher()
    private let epoll: Int32
    private let watches = Mutex<[UInt64: ReadableWatch]>([:])
    private let counter = Atomic<UInt64>(0)
    private static let interest = EPOLLIN.rawValue | EPOLLONESHOT.rawValue

    private init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { return }  // every `add` then fails, and its handler says why
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(&thread, nil, { context in
            Unmanaged<DescriptorWatcher>.fromOpaque(context!).takeRetainedValue().serve()
        }, context)
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<DescriptorWatcher>.fromOpaque(context).release()
        }
    }

    func nextNumber() -> UInt64 { counter.wrappingAdd(1, ordering: .relaxed).newValue }

    /// False when epoll will not watch it (no epoll, a bad descriptor, a regular file).
    func add(_ watch: ReadableWatch, descriptor: Int32, number: UInt64) -> Bool {
        watches.withLock { $0[number] = watch }
        guard epoll >= 0, control(EPOLL_CTL_ADD, descriptor: descriptor, number: number) else {
            watches.withLock { _ = $0.removeValue(forKey: number) }
            return false
        }
        return true
    }

    func rearm(descriptor: Int32, number: UInt64) {
        _ = control(EPOLL_CTL_MOD, descriptor: descriptor, number: number)
    }

    /// Takes the descriptor out of epoll and forgets the watch: an event already taken for
    /// it finds no watch and is dropped.
    func remove(descriptor: Int32, number: UInt64) {
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, descriptor, nil)
        watches.withLock { _ = $0.removeValue(forKey: number) }
    }

    private func control(_ operation: Int32, descriptor: Int32, number: UInt64) -> Bool {
        var event = epoll_event()
        event.events = Self.interest
        event.data.u64 = number
        return epoll_ctl(epoll, operation, descriptor, &event) == 0
    }

    private func serve() -> Never {
        var events = [epoll_event](repeating: epoll_event(), count: 32)
        while true {
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), -1) }
            guard count > 0 else { continue }  // EINTR
            for event in events.prefix(Int(count)) {
                let number = event.data.u64
                watches.withLock { $0[number] }?.fired()
            }
        }
    }
}
