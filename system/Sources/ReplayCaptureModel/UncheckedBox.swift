/// Hands an object that is used by exactly one thread at a time to the thread that will own it.
package struct UncheckedBox<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}
