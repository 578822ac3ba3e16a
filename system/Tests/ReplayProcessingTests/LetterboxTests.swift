@_spi(OpenReplayKitInternal) import ReplayMedia
@_spi(OpenReplayKitInternal) import ReplayProcessing
import Testing

@Suite struct LetterboxTests {
    func place(_ picture: (Int, Int), in frame: (Int, Int)) -> [Int] {
        let box = Letterbox(picture: (picture.0, picture.1), frame: (frame.0, frame.1))
        return [box.x, box.y, box.width, box.height]
    }

    @Test func aWidePictureInANarrowFrameGetsBarsAboveAndBelow() {
        // 16:9 into 4:3: full width, 60 rows of black on each side.
        #expect(place((1920, 1080), in: (640, 480)) == [0, 60, 640, 360])
    }

    @Test func aNarrowPictureInAWideFrameGetsBarsLeftAndRight() {
        // 4:3 into 16:9: full height, 160 columns of black on each side.
        #expect(place((640, 480), in: (1280, 720)) == [160, 0, 960, 720])
        // A portrait screen in a landscape movie.
        #expect(place((480, 640), in: (800, 600)) == [174, 0, 450, 600])
    }

    @Test func oddSizesLandOnEvenEdges() {
        // 1366x768 at 640 wide is 359.8 rows: 360.
        #expect(place((1366, 768), in: (640, 480)) == [0, 60, 640, 360])
        // 400 rows at 800/720 is 444.4: 444, and bars of 78.
        #expect(place((720, 400), in: (800, 600)) == [0, 78, 800, 444])
        // 171 columns each side would split chroma: 170 on the left, 172 on the right.
        #expect(place((800, 600), in: (1366, 768)) == [170, 0, 1024, 768])
    }

    @Test func theSameShapeFillsTheFrame() {
        #expect(place((640, 480), in: (640, 480)) == [0, 0, 640, 480])
        #expect(place((800, 600), in: (640, 480)) == [0, 0, 640, 480])
    }
}

@Suite struct PictureFitTests {
    /// A picture of one flat video-range luma, with grey chroma.
    func flat(width: Int, height: Int, luma: UInt8, format: PictureFormat = .bt601VideoRange) -> PixelBuffer {
        let picture = PixelBuffer(width: width, height: height, format: format)
        let bytes = picture.mutableBytes
        for index in 0..<picture.offset(ofPlane: 1) { bytes[index] = luma }
        for index in picture.offset(ofPlane: 1)..<bytes.count { bytes[index] = 128 }
        return picture
    }

    func luma(_ picture: PixelBuffer, x: Int, y: Int) -> UInt8 { picture.bytes[y * picture.stride(ofPlane: 0) + x] }

    @Test func aWidePictureIsLetterBoxed() {
        let fitted = PictureTransform().fit(flat(width: 32, height: 18, luma: 235), width: 32, height: 24)
        #expect(fitted.width == 32 && fitted.height == 24)
        // 18 rows from row 2; bars of 2 above, 4 below (edges even for chroma).
        for y in 0..<24 {
            let expected: UInt8 = (2..<20).contains(y) ? 235 : 16
            #expect((0..<32).allSatisfy { luma(fitted, x: $0, y: y) == expected }, "row \(y)")
        }
        let chroma = fitted.bytes[fitted.offset(ofPlane: 1)..<fitted.bytes.count]
        #expect(chroma.allSatisfy { $0 == 128 }, "black bars have no colour")
    }

    @Test func reusedMemoryShowsNoneOfTheLastPicture() {
        let transform = PictureTransform()
        // A wide picture leaves white in the middle rows of the pooled memory…
        _ = transform.fit(flat(width: 32, height: 18, luma: 235), width: 32, height: 24)
        // …that a narrow one, pillar-boxed into the same memory, must black out at its sides.
        let fitted = transform.fit(flat(width: 18, height: 24, luma: 235), width: 32, height: 24)
        for x in 0..<32 {
            let expected: UInt8 = (6..<24).contains(x) ? 235 : 16
            #expect((0..<24).allSatisfy { luma(fitted, x: x, y: $0) == expected }, "column \(x)")
        }
    }

    /// Black is the picture's own black: 0 in full range, where 16 would be a grey bar.
    @Test func barsAreBlackInThePicturesOwnRangeAndTheFormatIsKept() {
        let full = PictureFormat(matrix: .bt709, range: .full)
        let fitted = PictureTransform().fit(flat(width: 32, height: 18, luma: 255, format: full), width: 32, height: 24)
        #expect(fitted.format == full)
        #expect((0..<32).allSatisfy { luma(fitted, x: $0, y: 0) == 0 && luma(fitted, x: $0, y: 23) == 0 })
        #expect((0..<32).allSatisfy { luma(fitted, x: $0, y: 10) == 255 })
    }

    @Test func aPictureOfTheFrameSizeIsPassedThrough() {
        let picture = flat(width: 32, height: 24, luma: 100)
        let fitted = PictureTransform().fit(picture, width: 32, height: 24)
        #expect(fitted.storage === picture.storage)
    }
}
