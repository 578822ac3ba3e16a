#if canImport(Glibc)
import Glibc
#endif
import CShims
import Dispatch
import Synchronization

/// The one thread of its own a process of ours keeps for its whole life, started on first
/// use. It waits in one epoll instance for every `ReadableWatch`, and it starts the children
/// whose parent-death signal matters (`run`): Linux sends that signal when the *thread* that
/// forked the child ends, and dispatch's worker threads come and go.
///
/// Each watched descriptor is armed for one event at a time (EPOLLONESHOT): its handler runs,
/// then it is armed again, so a handler never runs twice at once and a level that stays
/// readable is not reported over and over meanwhile. Jobs arrive through an eventfd.
final class WatcherThread: Sendable {
    static let shared = WatcherThread()
    private let epoll: Int32
    /// Readable while jobs wait; watched under number 0 (watches count from 1); -1 without one.
    private let wakeup: Int32
    private let watches = Mutex<[UInt64: ReadableWatch]>([:])
    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let counter = Atomic<UInt64>(0)
    /// The thread's id once it serves; 0 while it does not (it could not be made).
    private let thread = Atomic<UInt>(0)
    private static let interest = EPOLLIN.rawValue | EPOLLONESHOT.rawValue
    private static let wakeupNumber: UInt64 = 0

    private init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        // Without epoll every `add` fails, and its handler says why.
        guard epoll >= 0 else {
            wakeup = -1
            return
        }
        // Without an eventfd in epoll, jobs run on their callers' threads; watches are served all the same.
        var wakeup = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = Self.wakeupNumber
        if wakeup >= 0 && epoll_ctl(epoll, EPOLL_CTL_ADD, wakeup, &event) != 0 {
            close(wakeup)
            wakeup = -1
        }
        self.wakeup = wakeup
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(&thread, nil, { context in
            Unmanaged<WatcherThread>.fromOpaque(context!).takeRetainedValue().serve()
        }, context)
        if created == 0 {
            pthread_detach(thread)
            self.thread.store(thread, ordering: .releasing)
        } else {
            Unmanaged<WatcherThread>.fromOpaque(context).release()
        }
    }

    /// Runs `body` on this thread and returns its result, waiting for it (on the thread
    /// itself, or with no thread or no eventfd to reach it, right away).
    func run(_ body: @escaping @Sendable () -> Int32) -> Int32 {
        let thread = thread.load(ordering: .acquiring)
        guard thread != 0, wakeup >= 0, pthread_equal(pthread_self(), thread) == 0 else { return body() }
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Int32>(0)
        jobs.withLock {
            $0.append {
                result.withLock { $0 = body() }
                done.signal()
            }
        }
        _ = eventfd_write(wakeup, 1)
        done.wait()
        return result.withLock { $0 }
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
                if number == Self.wakeupNumber {
                    var value: eventfd_t = 0
                    _ = eventfd_read(wakeup, &value)
                    for job in jobs.withLock({ jobs in defer { jobs.removeAll() }; return jobs }) { job() }
                } else {
                    watches.withLock { $0[number] }?.fired()
                }
            }
        }
    }
}
