import Synchronization

/// Recycles picture memory: at 1080p every frame is 3 MB, and allocating one per frame on
/// one thread and freeing it on another made the allocator hold on to hundreds of MB.
///
/// A storage is reused once nobody but the pool refers to it any more, so consumers need
/// not give anything back: dropping their last `PixelBuffer` is enough.
public final class PixelBufferPool: Sendable {
    private let storages = Mutex<[PixelStorage]>([])

    public init() {}

    /// A picture of this size in recycled memory where some is free, new memory otherwise.
    public func take(width: Int, height: Int) -> PixelBuffer {
        let byteCount = PixelBuffer.byteCount(width: width, height: height)
        let storage = storages.withLock { storages -> PixelStorage in
            // Memory of another size belongs to a screen that is gone.
            storages.removeAll { $0.bytes.count != byteCount }
            for index in storages.indices where isKnownUniquelyReferenced(&storages[index]) {
                return storages[index]
            }
            let fresh = PixelStorage(byteCount: byteCount)
            storages.append(fresh)
            return fresh
        }
        return PixelBuffer(width: width, height: height, storage: storage)
    }

    /// How many storages the pool holds (in use or free).
    public var count: Int { storages.withLock { $0.count } }
}
