import Synchronization

/// Windows that apps asked to keep out of every capture. Capture reads the set for each
/// frame and paints what is visible of these windows black.
public final class ProtectedWindows: Sendable {
    private struct State {
        var owners: [UInt32: Int] = [:]
        var generation = 0
        var observers: [Int: @Sendable (Set<UInt32>) -> Void] = [:]
        var nextObserver = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Protects `window` on behalf of `owner` (a connection), until `release(owner:)`.
    public func protect(_ window: UInt32, owner: Int) {
        change {
            $0.owners[window] = owner
            return true
        }
    }

    public func unprotect(_ window: UInt32, owner: Int) {
        change { state in
            guard state.owners[window] == owner else { return false }
            state.owners[window] = nil
            return true
        }
    }

    /// Drops every window `owner` protected (its connection closed).
    public func release(owner: Int) {
        change { state in
            let before = state.owners.count
            state.owners = state.owners.filter { $0.value != owner }
            return state.owners.count != before
        }
    }

    /// Makes the set exactly `windows` (a capture process told the set by replayd).
    public func replace(with windows: [UInt32]) {
        change { state in
            let owners = Dictionary(windows.map { ($0, 0) }, uniquingKeysWith: { first, _ in first })
            guard owners != state.owners else { return false }
            state.owners = owners
            return true
        }
    }

    /// Calls `handler` with the new set after every change, until `stopObserving` with the
    /// number returned (a capture process in another process hears of each change at once).
    public func observe(_ handler: @escaping @Sendable (Set<UInt32>) -> Void) -> Int {
        state.withLock { state in
            state.nextObserver += 1
            state.observers[state.nextObserver] = handler
            return state.nextObserver
        }
    }

    public func stopObserving(_ observer: Int) {
        _ = state.withLock { $0.observers.removeValue(forKey: observer) }
    }

    /// Applies `update`; when it changed the set, moves the generation and tells the observers.
    private func change(_ update: (inout State) -> Bool) {
        let told = state.withLock { state -> (Set<UInt32>, [@Sendable (Set<UInt32>) -> Void])? in
            guard update(&state) else { return nil }
            state.generation += 1
            return (Set(state.owners.keys), Array(state.observers.values))
        }
        guard let (windows, observers) = told else { return }
        for observer in observers { observer(windows) }
    }

    public var windows: Set<UInt32> { state.withLock { Set($0.owners.keys) } }

    /// Changes whenever the set does: capture takes a fresh frame when it moves.
    public var generation: Int { state.withLock { $0.generation } }
}
