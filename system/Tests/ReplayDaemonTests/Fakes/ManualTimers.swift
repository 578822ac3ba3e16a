import Dispatch
import ReplaySystem
import Synchronization

/// Timers on a clock the test moves by hand (`advance`): what is due runs then, in order of
/// its deadline, on its own queue, before `advance` returns. Nothing runs by itself.
final class ManualTimers: Timers {
    private struct Entry {
        let id: Int
        var due: Int64
        /// Nanoseconds between ticks, for a repeating timer.
        let interval: Int64?
        let queue: DispatchQueue
        let action: @Sendable () -> Void
    }

    private struct State {
        var now = Int64(100) * 1_000_000_000
        var nextID = 0
        var entries: [Entry] = []
    }

    private let state = Mutex(State())

    func now() -> Int64 { state.withLock { $0.now } }

    /// Timers waiting, cancelled and fired ones not counted.
    var pending: Int { state.withLock { $0.entries.count } }

    /// Moves the clock `seconds` on, running each timer that comes due on the way.
    func advance(by seconds: Double) {
        let target = state.withLock { $0.now + Int64(seconds * 1e9) }
        while let entry = nextDue(by: target) {
            entry.queue.sync { entry.action() }
        }
        state.withLock { $0.now = target }
    }

    /// Takes the earliest timer due by `target` (a repeating one is set again), moving the clock to it.
    private func nextDue(by target: Int64) -> Entry? {
        state.withLock { state in
            guard let index = state.entries.indices.filter({ state.entries[$0].due <= target })
                .min(by: { state.entries[$0].due < state.entries[$1].due }) else { return nil }
            let entry = state.entries[index]
            state.now = max(state.now, entry.due)
            if let interval = entry.interval {
                state.entries[index].due += interval
            } else {
                state.entries.remove(at: index)
            }
            return entry
        }
    }

    fileprivate func schedule(_ seconds: Double?, interval: Double?, on queue: DispatchQueue,
                              _ action: @escaping @Sendable () -> Void) -> Int {
        state.withLock { state in
            state.nextID += 1
            if let seconds {
                state.entries.append(Entry(id: state.nextID, due: state.now + Int64(seconds * 1e9),
                                           interval: interval.map { Int64($0 * 1e9) }, queue: queue, action: action))
            }
            return state.nextID
        }
    }

    /// Sets (or with nil, unsets) when timer `id` fires next.
    fileprivate func reschedule(_ id: Int, after seconds: Double?, interval: Double?, on queue: DispatchQueue,
                                _ action: @escaping @Sendable () -> Void) {
        state.withLock { state in
            state.entries.removeAll { $0.id == id }
            if let seconds {
                state.entries.append(Entry(id: id, due: state.now + Int64(seconds * 1e9), interval: interval.map { Int64($0 * 1e9) },
                                           queue: queue, action: action))
            }
        }
    }

    fileprivate func cancel(_ id: Int) {
        state.withLock { $0.entries.removeAll { $0.id == id } }
    }

    func after(_ seconds: Double, on queue: DispatchQueue, _ action: @escaping @Sendable () -> Void) -> any TimerControl {
        ManualTimer(timers: self, id: schedule(max(0, seconds), interval: nil, on: queue, action), queue: queue, action: action)
    }

    func repeating(every interval: Double, on queue: DispatchQueue, paused: Bool,
                   _ action: @escaping @Sendable () -> Void) -> any RepeatingTimerControl {
        let id = schedule(paused ? nil : interval, interval: interval, on: queue, action)
        return ManualRepeatingTimer(timer: ManualTimer(timers: self, id: id, queue: queue, action: action), interval: interval,
                                    ticking: !paused)
    }

    func deadline(on queue: DispatchQueue, _ action: @escaping @Sendable () -> Void) -> any DeadlineTimerControl {
        ManualTimer(timers: self, id: schedule(nil, interval: nil, on: queue, action), queue: queue, action: action)
    }
}

/// One timer of `ManualTimers`: a one-shot, or a deadline set again and again.
private final class ManualTimer: DeadlineTimerControl {
    let timers: ManualTimers
    let id: Int
    let queue: DispatchQueue
    let action: @Sendable () -> Void

    init(timers: ManualTimers, id: Int, queue: DispatchQueue, action: @escaping @Sendable () -> Void) {
        self.timers = timers
        self.id = id
        self.queue = queue
        self.action = action
    }

    func fire(after seconds: Double) { timers.reschedule(id, after: seconds, interval: nil, on: queue, action) }

    func cancel() { timers.cancel(id) }
}

private final class ManualRepeatingTimer: RepeatingTimerControl {
    let timer: ManualTimer
    let interval: Double
    private let ticking: Mutex<Bool>

    init(timer: ManualTimer, interval: Double, ticking: Bool) {
        self.timer = timer
        self.interval = interval
        self.ticking = Mutex(ticking)
    }

    func resume(immediately: Bool) {
        let start = ticking.withLock { ticking in
            defer { ticking = true }
            return !ticking
        }
        if start { timer.timers.reschedule(timer.id, after: immediately ? 0 : interval, interval: interval, on: timer.queue, timer.action) }
    }

    func pause() {
        ticking.withLock { $0 = false }
        timer.timers.reschedule(timer.id, after: nil, interval: interval, on: timer.queue, timer.action)
    }

    func cancel() { timer.cancel() }
}
