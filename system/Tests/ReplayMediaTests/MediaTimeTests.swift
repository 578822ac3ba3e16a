@_spi(OpenReplayKitInternal) import ReplayMedia
import Testing

@Suite struct MediaTimeTests {
    @Test func convertsToTimescalesRoundingToTheNearestUnit() {
        #expect(MediaTime(nanoseconds: 1_000_000_000).value(timescale: 90_000) == 90_000)
        #expect(MediaTime(nanoseconds: 5_555).value(timescale: 90_000) == 0)
        #expect(MediaTime(nanoseconds: 5_556).value(timescale: 90_000) == 1)
        #expect(MediaTime(nanoseconds: -1_000_000_000).value(timescale: 48_000) == -48_000)
        #expect(MediaTime(seconds: 3_600.5).value(timescale: 1000) == 3_600_500)
    }

    @Test func sampleIndexesMapToTime() {
        #expect(MediaTime.samples(48_000, rate: 48_000) == MediaTime(nanoseconds: 1_000_000_000))
        #expect(MediaTime.samples(1024, rate: 48_000).nanoseconds == 21_333_333)
        #expect(MediaTime.samples(1024, rate: 44_100).nanoseconds == 23_219_954)
    }

    @Test func audioBufferDurationFollowsItsFrames() {
        let buffer = AudioBuffer(source: .app, time: .zero, sampleRate: 48_000, channels: 2,
                                 samples: [Float](repeating: 0, count: 960))
        #expect(buffer.frameCount == 480)
        #expect(buffer.duration == MediaTime(nanoseconds: 10_000_000))
    }

    @Test func pixelBuffersAreEvenAndPlanar() {
        let size = evenSize(width: 1921, height: 1081)
        #expect(size.width == 1920 && size.height == 1080)
        let buffer = PixelBuffer(width: 4, height: 2, format: .bt601VideoRange)
        #expect(buffer.bytes.count == 8 + 2 + 2)
        #expect(buffer.offset(ofPlane: 1) == 8 && buffer.offset(ofPlane: 2) == 10)
        #expect(buffer.stride(ofPlane: 2) == 2 && buffer.height(ofPlane: 1) == 1)
    }
}

@Suite struct PixelBufferTests {
    @Test func aPictureOfOnesOwnIsFilledOnceAndCarriesItsFormat() {
        let format = PictureFormat(matrix: .bt709, range: .full)
        let picture = PixelBuffer(width: 4, height: 2, format: format) { bytes in
            for index in bytes.indices { bytes[index] = UInt8(index) }
        }
        #expect(picture.format == format && picture.bytes.count == 12 && picture.bytes[11] == 11)
        let copy = picture.copy()
        #expect(copy.storage !== picture.storage && copy.format == format && copy.bytes.elementsEqual(picture.bytes))
    }

    @Test func theFormatSaysItsBlackWhiteAndName() {
        #expect(PictureFormat.bt601VideoRange.blackLuma == 16 && PictureFormat.bt601VideoRange.whiteLuma == 235)
        let full = PictureFormat(matrix: .bt709, range: .full)
        #expect(full.blackLuma == 0 && full.whiteLuma == 255)
        #expect(full.description == "I420 BT.709 full range" && PictureFormat.bt601VideoRange.description == "I420 BT.601 video range")
    }
}

@Suite struct PixelBufferPoolTests {
    @Test func memoryIsReusedOnceNobodyHoldsIt() {
        let pool = PixelBufferPool()
        var first: PixelBuffer? = pool.take(width: 64, height: 32, format: .bt601VideoRange)
        let held = pool.take(width: 64, height: 32, format: .bt601VideoRange)!
        #expect(first!.storage !== held.storage)
        let address = first!.storage.bytes.baseAddress
        first = nil
        let reused = pool.take(width: 64, height: 32, format: .bt601VideoRange)!
        #expect(reused.storage.bytes.baseAddress == address)
        #expect(pool.count == 2)
    }

    @Test func aNewSizeDropsTheOldMemory() {
        let pool = PixelBufferPool()
        _ = pool.take(width: 64, height: 32, format: .bt601VideoRange)
        let resized = pool.take(width: 32, height: 32, format: .bt601VideoRange)!
        #expect(resized.bytes.count == 32 * 32 * 3 / 2)
        #expect(pool.count == 1)
    }

    @Test func prefillingMakesStoragesThatTheNextPicturesReuse() {
        let pool = PixelBufferPool()
        pool.prefill(count: 3, width: 64, height: 32, format: .bt601VideoRange)
        #expect(pool.count == 3)
        let taken = (0..<3).compactMap { _ in pool.take(width: 64, height: 32, format: .bt601VideoRange) }
        #expect(taken.count == 3 && pool.count == 3, "the three pictures take the prefilled storages")
        #expect(taken.allSatisfy { $0.bytes.allSatisfy { $0 == 0 } }, "prefilled memory was written once")
        // A fixed pool has its storages already: nothing is added.
        let fixed = PixelBufferPool(fixed: [PixelStorage(byteCount: 64 * 32 * 3 / 2)])
        fixed.prefill(count: 3, width: 64, height: 32, format: .bt601VideoRange)
        #expect(fixed.count == 1)
    }

    @Test func aFixedPoolNeverGrowsAndGivesNothingWhenAllAreInUse() {
        // The pool must hold the only references: a storage is free when nobody else has it.
        let pool = PixelBufferPool(fixed: [PixelStorage(byteCount: 64 * 32 * 3 / 2), PixelStorage(byteCount: 64 * 32 * 3 / 2)])
        let a = pool.take(width: 64, height: 32, format: .bt601VideoRange), b = pool.take(width: 64, height: 32, format: .bt601VideoRange)
        #expect(a != nil && b != nil && a!.storage !== b!.storage)
        #expect(pool.take(width: 64, height: 32, format: .bt601VideoRange) == nil)
        #expect(pool.take(width: 640, height: 480, format: .bt601VideoRange) == nil, "a picture larger than the surfaces")
        #expect(pool.count == 2)
        withExtendedLifetime((a, b)) {}
    }
}
