import Dispatch

/// Calls `whenReadable` each time a descriptor has something to read (a message, a pipe's
/// output, a pidfd's "exited"), on a serial queue, until cancelled; then `whenCancelled`
/// (where the descriptor is closed: not before the source is done with it). No thread
/// waits meanwhile. It keeps itself alive until cancelled (its handler holds it), so a
/// watch nobody else keeps still fires.
public final class ReadableWatch: @unchecked Sendable {
    // @unchecked: a dispatch source may be resumed and cancelled from any thread.
    private let source: any DispatchSourceRead

    public init(descriptor: Int32, label: String, whenCancelled: @escaping @Sendable () -> Void,
                whenReadable: @escaping @Sendable (ReadableWatch) -> Void) {
        source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: DispatchQueue(label: label))
        source.setEventHandler { [self] in whenReadable(self) }
        source.setCancelHandler(handler: whenCancelled)
        source.resume()
    }

    /// Stops watching; `whenCancelled` runs once, after any call of `whenReadable` in progress.
    public func cancel() { source.cancel() }
}
