import Synchronization

/// A one-way flag that long-running loops poll to know when to finish.
public final class StopFlag: Sendable {
    private let raised = Atomic<Bool>(false)
    public init() {}
    public func raise() { raised.store(true, ordering: .releasing) }
    public var isRaised: Bool { raised.load(ordering: .acquiring) }
}
