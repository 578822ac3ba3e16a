import Synchronization

/// Recycles picture memory: at 1080p every frame is 3 MB, and allocating one per frame on
/// one thread and freeing it on another made the allocator hold on to hundreds of MB.
///
/// A storage is reused once nobody but the pool refers to it any more, so consumers need
/// not give anything back: dropping their last `PixelBuffer` is enough.
///
/// A pool can also be fixed: a set of storages given up front (shared surfaces an upload
/// extension reads), never grown, so when all are in use `take` has nothing to give.
public final class PixelBufferPool: Sendable {
    private let storages: Mutex<[PixelStorage]>
    private let isFixed: Bool

    public init() {
        storages = Mutex([])
        isFixed = false
    }

    /// A pool of exactly these storages.
    public init(fixed: [PixelStorage]) {
        storages = Mutex(fixed)
        isFixed = true
    }

    /// A picture of this size in recycled memory where some is free, new memory otherwise;
    /// nil when a fixed pool has none free (the caller drops the frame).
    public func take(width: Int, height: Int) -> PixelBuffer? {
        let byteCount = PixelBuffer.byteCount(width: width, height: height)
        let storage = storages.withLock { storages -> PixelStorage? in
            if isFixed {
                for index in storages.indices
                where storages[index].bytes.count >= byteCount && isKnownUniquelyReferenced(&storages[index]) {
                    return storages[index]
                }
                return nil
            }
            // Memory of another size belongs to a screen that is gone.
            storages.removeAll { $0.bytes.count != byteCount }
            for index in storages.indices where isKnownUniquelyReferenced(&storages[index]) {
                return storages[index]
            }
            let fresh = PixelStorage(byteCount: byteCount)
            storages.append(fresh)
            return fresh
        }
        return storage.map { PixelBuffer(width: width, height: height, storage: $0) }
    }

    /// How many storages the pool holds (in use or free).
    public var count: Int { storages.withLock { $0.count } }
}
