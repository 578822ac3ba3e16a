import Foundation

/// A first-in first-out hand-off between threads. Producers that must not block (screen
/// capture) use `offer`, which refuses when the queue is full so the caller can count a
/// dropped frame; `pop` blocks until an element arrives or the queue is closed.
public final class BoundedQueue<Element: Sendable>: @unchecked Sendable {
    // @unchecked: every stored property is guarded by `condition`.
    private let condition = NSCondition()
    /// Popped slots are emptied at once: a popped 3 MB picture must not stay referenced here.
    private var elements: [Element?] = []
    private var head = 0
    private var isClosed = false
    public let capacity: Int

    public init(capacity: Int) { self.capacity = capacity }

    /// Appends unless the queue holds `capacity` elements or is closed.
    public func offer(_ element: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !isClosed, elements.count - head < capacity else { return false }
        elements.append(element)
        condition.signal()
        return true
    }

    /// Appends whatever the count (for small, must-keep elements such as audio).
    public func append(_ element: Element) {
        condition.lock()
        defer { condition.unlock() }
        guard !isClosed else { return }
        elements.append(element)
        condition.signal()
    }

    /// The next element; nil once the queue is closed and drained.
    public func pop() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while head == elements.count && !isClosed { condition.wait() }
        guard head < elements.count else { return nil }
        let element = elements[head]
        elements[head] = nil
        head += 1
        if head > 64 && head * 2 > elements.count {
            elements.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Lets `pop` drain what is queued, then return nil.
    public func close() {
        condition.lock()
        isClosed = true
        condition.broadcast()
        condition.unlock()
    }
}
