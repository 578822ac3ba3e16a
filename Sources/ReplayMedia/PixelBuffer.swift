/// Memory for one picture, at a stable address so C code (libyuv, the encoder) can use it
/// without copies.
///
/// Written only by the producer before the picture is shared, read-only after that: a
/// `PixelBuffer` is handed from thread to thread, never written by two at once.
public final class PixelStorage: @unchecked Sendable {
    // @unchecked: see above; the single-writer-then-readers hand-off is the synchronisation.
    public let bytes: UnsafeMutableRawBufferPointer
    private let release: (@Sendable () -> Void)?

    public init(byteCount: Int) {
        bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 64)
        release = nil
    }

    /// Memory that belongs to someone else (a shared surface); `release` runs when the last
    /// picture using it is gone, to give it back.
    public init(borrowing bytes: UnsafeMutableRawBufferPointer, release: @escaping @Sendable () -> Void) {
        self.bytes = bytes
        self.release = release
    }

    deinit {
        if let release { release() } else { bytes.deallocate() }
    }
}

/// A planar 4:2:0 picture (I420): Y, then U, then V, each tightly packed in one storage.
///
/// Width and height are even: 4:2:0 chroma cannot describe an odd edge, so capture
/// drops the last column or row of an odd-sized screen rather than inventing one.
public struct PixelBuffer: Sendable {
    public let width: Int
    public let height: Int
    public let storage: PixelStorage

    /// A picture in fresh, uninitialised memory.
    public init(width: Int, height: Int) {
        self.init(width: width, height: height, storage: PixelStorage(byteCount: Self.byteCount(width: width, height: height)))
    }

    /// A picture in `storage`, which must hold at least `byteCount(width:height:)` bytes.
    public init(width: Int, height: Int, storage: PixelStorage) {
        precondition(width > 0 && height > 0 && width % 2 == 0 && height % 2 == 0, "I420 needs even, positive sizes")
        precondition(storage.bytes.count >= Self.byteCount(width: width, height: height))
        self.width = width
        self.height = height
        self.storage = storage
    }

    public static func byteCount(width: Int, height: Int) -> Int { width * height * 3 / 2 }

    /// Where plane 0 (Y), 1 (U) or 2 (V) starts.
    public func offset(ofPlane plane: Int) -> Int {
        let luma = width * height
        return plane == 0 ? 0 : luma + (plane - 1) * (luma / 4)
    }

    public func stride(ofPlane plane: Int) -> Int { plane == 0 ? width : width / 2 }
    public func height(ofPlane plane: Int) -> Int { plane == 0 ? height : height / 2 }

    /// The picture's bytes, all three planes.
    public var bytes: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: storage.bytes[0..<Self.byteCount(width: width, height: height)])
    }

    /// Where the picture's bytes (plane 0) start, for C code that takes plane pointers.
    @inlinable public var baseAddress: UnsafeMutableRawPointer {
        storage.bytes.baseAddress!  // never nil: init requires positive sizes, so storage holds at least 6 bytes
    }
}

/// The largest even size that fits in `width` x `height`.
public func evenSize(width: Int, height: Int) -> (width: Int, height: Int) {
    (width & ~1, height & ~1)
}
