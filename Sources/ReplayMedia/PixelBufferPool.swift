import Synchronization

/// Recycles picture memory: at 1080p every frame is 3 MB, and allocating one per frame on
/// one thread and freeing it on another made the allocator hold on to hundreds of MB.
///
/// A storage is reused once nobody but the pool refers to it any more, so consumers need
/// not give anything back: dropping their last `PixelBuffer` is enough.
///
/// A pool can also be fixed: a set of storages given up front (shared surfaces an upload
/// extension reads), never grown, so when all are in use `take` has nothing to give.
///
/// Pictures are taken (and written) only by producers inside this package; outside it a
/// pool is a type capture sources expose, not a way to make pictures (`PixelBuffer(fill:)` is).
public final class PixelBufferPool: Sendable {
    private let storages: Mutex<[PixelStorage]>
    private let isFixed: Bool
    /// For a fixed pool: the size its storages are for, and where pictures of any other size
    /// (a screen that changed size) are taken instead.
    private let fixedSize: (width: Int, height: Int)?
    private let otherSizes: PixelBufferPool?

    /// A pool that grows as needed.
    public init() {
        storages = Mutex([])
        isFixed = false
        fixedSize = nil
        otherSizes = nil
    }

    /// A pool of exactly these storages.
    @_spi(OpenReplayKitInternal) public init(fixed: [PixelStorage]) {
        storages = Mutex(fixed)
        isFixed = true
        fixedSize = nil
        otherSizes = nil
    }

    /// A pool of exactly these storages for pictures of `size`; pictures of another size come
    /// from a growing pool of their own (to be fitted into a storage of this one by the consumer).
    @_spi(OpenReplayKitInternal) public init(fixed: [PixelStorage], size: (width: Int, height: Int)) {
        storages = Mutex(fixed)
        isFixed = true
        fixedSize = size
        otherSizes = PixelBufferPool()
    }

    /// A picture of this size and format in recycled memory where some is free, new memory
    /// otherwise; nil when a fixed pool has none free (the caller drops the frame). Its bytes
    /// are whatever the memory last held: the producer (in this package) writes all of them.
    @_spi(OpenReplayKitInternal) public func take(width: Int, height: Int, format: PictureFormat) -> PixelBuffer? {
        if let fixedSize, let otherSizes, fixedSize != (width, height) {
            return otherSizes.take(width: width, height: height, format: format)
        }
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
        return storage.map { PixelBuffer(width: width, height: height, format: format, storage: $0) }
    }

    /// Makes sure `count` storages for pictures of this size are there and written once, so
    /// the first pictures taken do not pay for faulting fresh memory in. A fixed pool has its
    /// storages already.
    @_spi(OpenReplayKitInternal) public func prefill(count: Int, width: Int, height: Int, format: PictureFormat) {
        guard !isFixed else { return }
        let taken = (0..<count).compactMap { _ in take(width: width, height: height, format: format) }
        for picture in taken { picture.storage.mutableBytes.initializeMemory(as: UInt8.self, repeating: 0) }
    }

    /// How many storages the pool holds (in use or free).
    public var count: Int { storages.withLock { $0.count } }
}
