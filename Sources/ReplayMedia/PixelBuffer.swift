/// Memory for one picture, at a stable address so C code (libyuv, the encoder) can use it
/// without copies.
///
/// Written only by its producer inside this package, before the picture is shared; read-only
/// after that. A `PixelBuffer` is handed from thread to thread, never written by two at once,
/// and outside this package it can only be read: `bytes` is an immutable pointer, and in an
/// upload extension the memory is replayd's shared surface, mapped read-only (a write faults).
public final class PixelStorage: @unchecked Sendable {
    // @unchecked: see above; the single-writer-then-readers hand-off is the synchronisation.
    /// The producer's view; memory borrowed read-only (an extension's surface) faults on a write.
    @_spi(OpenReplayKitInternal) public let mutableBytes: UnsafeMutableRawBufferPointer
    private let release: (@Sendable () -> Void)?

    /// Fresh, uninitialised memory of its own.
    @_spi(OpenReplayKitInternal) public init(byteCount: Int) {
        mutableBytes = UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 64)
        release = nil
    }

    /// Memory that belongs to someone else (a shared surface); `release` runs when the last
    /// picture using it is gone, to give it back.
    @_spi(OpenReplayKitInternal) public init(borrowing bytes: UnsafeMutableRawBufferPointer, release: @escaping @Sendable () -> Void) {
        mutableBytes = bytes
        self.release = release
    }

    /// Memory mapped read-only (an extension's view of a surface): never written through.
    @_spi(OpenReplayKitInternal) public convenience init(borrowingReadOnly bytes: UnsafeRawBufferPointer, release: @escaping @Sendable () -> Void) {
        self.init(borrowing: UnsafeMutableRawBufferPointer(mutating: bytes), release: release)
    }

    deinit {
        if let release { release() } else { mutableBytes.deallocate() }
    }

    /// All of the memory, read-only (it may hold more than one picture's bytes).
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(mutableBytes) }
}

/// A planar 4:2:0 picture: Y, then U, then V, each tightly packed in one storage, read as
/// `format` says (pixel layout, colour matrix, range).
///
/// Width and height are even: 4:2:0 chroma cannot describe an odd edge, so capture
/// drops the last column or row of an odd-sized screen rather than inventing one.
///
/// A picture is immutable to its users: `bytes` can only be read. Pictures replayd hands an
/// upload extension lie in shared memory mapped read-only; hold one only as long as you need
/// it (its surface goes back to replayd when the last reference is gone), or `copy()` it.
public struct PixelBuffer: Sendable {
    /// In pixels, even.
    public let width: Int
    /// In pixels, even.
    public let height: Int
    /// How to read the bytes: I420, which colour matrix, which range.
    public let format: PictureFormat
    /// The memory the bytes lie in; pictures that share a storage share their bytes.
    public let storage: PixelStorage

    /// A picture in fresh, uninitialised memory, for a producer in this package to fill.
    @_spi(OpenReplayKitInternal) public init(width: Int, height: Int, format: PictureFormat) {
        self.init(width: width, height: height, format: format,
                  storage: PixelStorage(byteCount: Self.byteCount(width: width, height: height)))
    }

    /// A picture in `storage`, which must hold at least `byteCount(width:height:)` bytes.
    @_spi(OpenReplayKitInternal) public init(width: Int, height: Int, format: PictureFormat, storage: PixelStorage) {
        precondition(width > 0 && height > 0 && width % 2 == 0 && height % 2 == 0, "I420 needs even, positive sizes")
        precondition(storage.mutableBytes.count >= Self.byteCount(width: width, height: height))
        self.width = width
        self.height = height
        self.format = format
        self.storage = storage
    }

    /// A picture of your own: `fill` writes all `byteCount(width:height:)` bytes (Y, U, V
    /// planes, tightly packed) once; from then on the picture is read-only like any other.
    public init(width: Int, height: Int, format: PictureFormat,
                fill: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        self.init(width: width, height: height, format: format)
        try fill(mutableBytes)
    }

    /// The same picture in memory of its own: keep it as long as you like, while the
    /// original (a shared surface) goes back to replayd.
    public func copy() -> PixelBuffer {
        PixelBuffer(width: width, height: height, format: format) { $0.copyMemory(from: bytes) }
    }

    /// Bytes for one I420 picture of this size: width × height of Y, a quarter of that each of U and V.
    public static func byteCount(width: Int, height: Int) -> Int { width * height * 3 / 2 }

    /// Where plane 0 (Y), 1 (U) or 2 (V) starts, in bytes from `baseAddress`.
    public func offset(ofPlane plane: Int) -> Int {
        let luma = width * height
        return plane == 0 ? 0 : luma + (plane - 1) * (luma / 4)
    }

    /// Bytes from one row of plane 0, 1 or 2 to the next (the plane's width: rows are packed).
    public func stride(ofPlane plane: Int) -> Int { plane == 0 ? width : width / 2 }
    /// Rows in plane 0, 1 or 2.
    public func height(ofPlane plane: Int) -> Int { plane == 0 ? height : height / 2 }

    /// The picture's bytes, all three planes, read-only.
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(mutableBytes) }

    /// The producer's view of the bytes, for writers in this package before the picture is shared.
    @_spi(OpenReplayKitInternal) public var mutableBytes: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: storage.mutableBytes[0..<Self.byteCount(width: width, height: height)])
    }

    /// Where the picture's bytes (plane 0) start, for C code that takes plane pointers.
    public var baseAddress: UnsafeRawPointer { UnsafeRawPointer(mutableBaseAddress) }

    /// `baseAddress` for writers in this package.
    @_spi(OpenReplayKitInternal) public var mutableBaseAddress: UnsafeMutableRawPointer {
        storage.mutableBytes.baseAddress!  // never nil: init requires positive sizes, so storage holds at least 6 bytes
    }
}

/// The largest even size that fits in `width` x `height`.
public func evenSize(width: Int, height: Int) -> (width: Int, height: Int) {
    (width & ~1, height & ~1)
}
