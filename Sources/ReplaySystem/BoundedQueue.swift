import FoundationEssentials

/// A first-in first-out hand-off between threads. Producers that must not block (screen
/// capture) use `offer`, which refuses once `capacity` offered elements wait, so the caller
/// can count a dropped frame; small must-keep elements (audio) use `append`, which neither
/// blocks nor counts against that capacity. `pop` blocks until an element arrives or the
/// queue is closed.
public final class BoundedQueue<Element: Sendable>: @unchecked Sendable {
    // @unchecked: every stored property is guarded by `condition`.
    private let condition = ConditionLock()
    /// Popped slots are emptied at once: a popped 3 MB picture must not stay referenced here.
    private var elements: [(element: Element, offered: Bool)?] = []
    private var head = 0
    private var offeredWaiting = 0
    private var isClosed = false
    public let capacity: Int

    public init(capacity: Int) { self.capacity = capacity }

    /// Appends unless `capacity` offered elements are waiting or the queue is closed.
    public func offer(_ element: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !isClosed, offeredWaiting < capacity else { return false }
        elements.append((element, true))
        offeredWaiting += 1
        condition.signal()
        return true
    }

    /// Appends whatever the count.
    public func append(_ element: Element) {
        condition.lock()
        defer { condition.unlock() }
        guard !isClosed else { return }
        elements.append((element, false))
        condition.signal()
    }

    /// The next element; nil once the queue is closed and drained.
    public func pop() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while head == elements.count && !isClosed { condition.wait() }
        guard head < elements.count, let entry = elements[head] else { return nil }
        elements[head] = nil
        head += 1
        if entry.offered { offeredWaiting -= 1 }
        if head > 64 && head * 2 > elements.count {
            elements.removeFirst(head)
            head = 0
        }
        return entry.element
    }

    /// Lets `pop` drain what is queued, then return nil.
    public func close() {
        condition.lock()
        isClosed = true
        condition.broadcast()
        condition.unlock()
    }
}
