import Synchronization

/// Handles given to C are tokens, never addresses: a number from a counter that never repeats,
/// with high bits set so that it is no address a program could dereference (a program that
/// does gets a fault at once, not somebody else's memory). A freed handle stays unknown for
/// good, so every call with it is answered `ORK_ERROR_INVALID_HANDLE`, as is NULL or any
/// pointer the library never gave out.
final class HandleTable<Object: Sendable>: Sendable {
    private struct State {
        var next: UInt = 1
        var objects: [UInt: Object] = [:]
    }

    private let tag: UInt
    private let state = Mutex(State())

    /// `tag`: the handle kind's high bits (clients and errors have their own, so one is never
    /// taken for the other).
    init(tag: UInt) {
        self.tag = tag
    }

    func insert(_ object: Object) -> UnsafeMutableRawPointer {
        let token = state.withLock { state in
            defer { state.next += 1 }
            let token = tag | (state.next << 4)
            state.objects[token] = object
            return token
        }
        // Never nil: the tag's bits are set.
        return UnsafeMutableRawPointer(bitPattern: token)!
    }

    func lookup(_ handle: UnsafeRawPointer?) -> Object? {
        guard let handle else { return nil }
        return state.withLock { $0.objects[UInt(bitPattern: handle)] }
    }

    /// Takes the object out: the handle is dead from now on.
    func remove(_ handle: UnsafeRawPointer?) -> Object? {
        guard let handle else { return nil }
        return state.withLock { $0.objects.removeValue(forKey: UInt(bitPattern: handle)) }
    }

    var count: Int { state.withLock { $0.objects.count } }
}
