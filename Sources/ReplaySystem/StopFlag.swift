import Synchronization

/// A one-way flag that long-running loops check to know when to finish. Loops that wait on
/// something else (a descriptor, a queue) register a wake-up with `whenRaised`.
public final class StopFlag: Sendable {
    private let raised = Atomic<Bool>(false)
    private let wakeUps = Mutex<[@Sendable () -> Void]>([])

    public init() {}

    public func raise() {
        guard !raised.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for wakeUp in wakeUps.withLock({ state in defer { state = [] }; return state }) { wakeUp() }
    }

    public var isRaised: Bool { raised.load(ordering: .acquiring) }

    /// Runs `action` when the flag is raised, at once if it already is.
    public func whenRaised(_ action: @escaping @Sendable () -> Void) {
        let now = wakeUps.withLock { wakeUps -> Bool in
            if isRaised { return true }
            wakeUps.append(action)
            return false
        }
        if now { action() }
    }
}
