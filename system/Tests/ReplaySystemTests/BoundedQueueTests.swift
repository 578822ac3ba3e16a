import ReplaySystem
import Testing

@Suite struct BoundedQueueTests {
    final class Payload: Sendable {}

    @Test func offerRefusesWhenFullAndAppendDoesNot() {
        let queue = BoundedQueue<Int>(capacity: 2)
        #expect(queue.offer(1) && queue.offer(2))
        #expect(!queue.offer(3))
        queue.append(4)
        #expect(queue.pop() == 1 && queue.pop() == 2 && queue.pop() == 4)
    }

    @Test func appendedElementsDoNotCountAgainstTheCapacity() {
        let queue = BoundedQueue<Int>(capacity: 1)
        for value in 0..<50 { queue.append(value) }
        #expect(queue.offer(100))
        #expect(!queue.offer(101))
        for value in 0..<50 { #expect(queue.pop() == value) }
        #expect(queue.pop() == 100)
        #expect(queue.offer(102))
    }

    @Test func closingDrainsThenEnds() {
        let queue = BoundedQueue<Int>(capacity: 4)
        queue.append(7)
        queue.close()
        #expect(!queue.offer(8))
        #expect(queue.pop() == 7)
        #expect(queue.pop() == nil)
    }

    @Test func poppedElementsAreNotKeptAlive() {
        let queue = BoundedQueue<Payload>(capacity: 4)
        weak var watched: Payload?
        do {
            let payload = Payload()
            watched = payload
            queue.append(payload)
        }
        _ = queue.pop()
        #expect(watched == nil)
    }

    @Test func aBlockedConsumerWakesForAProducerOnAnotherThread() async {
        let queue = BoundedQueue<Int>(capacity: 4)
        async let popped = Task.detached { queue.pop() }.value
        try? await Task.sleep(for: .milliseconds(50))
        queue.append(42)
        #expect(await popped == 42)
    }
}
