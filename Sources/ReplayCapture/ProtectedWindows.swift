import Synchronization

/// Windows that apps asked to keep out of every capture. Capture reads the set for each
/// frame and paints what is visible of these windows black.
public final class ProtectedWindows: Sendable {
    private struct State {
        var owners: [UInt32: Int] = [:]
        var generation = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Protects `window` on behalf of `owner` (a connection), until `release(owner:)`.
    public func protect(_ window: UInt32, owner: Int) {
        state.withLock {
            $0.owners[window] = owner
            $0.generation += 1
        }
    }

    public func unprotect(_ window: UInt32, owner: Int) {
        state.withLock { state in
            guard state.owners[window] == owner else { return }
            state.owners[window] = nil
            state.generation += 1
        }
    }

    /// Drops every window `owner` protected (its connection closed).
    public func release(owner: Int) {
        state.withLock { state in
            let before = state.owners.count
            state.owners = state.owners.filter { $0.value != owner }
            if state.owners.count != before { state.generation += 1 }
        }
    }

    public var windows: Set<UInt32> { state.withLock { Set($0.owners.keys) } }

    /// Changes whenever the set does: capture takes a fresh frame when it moves.
    public var generation: Int { state.withLock { $0.generation } }
}
