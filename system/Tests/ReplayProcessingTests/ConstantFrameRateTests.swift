import ReplayMedia
import ReplayProcessing
import Testing

/// Pictures are plain numbers here; times are in milliseconds of movie time.
@Suite struct ConstantFrameRateTests {
    func ms(_ milliseconds: Int64) -> MediaTime { MediaTime(nanoseconds: milliseconds * 1_000_000) }

    /// Feeds (picture, ms) pairs, then finishes at `end` ms; the movie as (picture, index) pairs.
    func movie(fps: Int, _ pictures: [(Int, Int64)], end: Int64) -> (frames: [ConstantFrameRate<Int>.Frame], grid: ConstantFrameRate<Int>) {
        var grid = ConstantFrameRate<Int>(fps: fps)
        var frames: [ConstantFrameRate<Int>.Frame] = []
        for (picture, time) in pictures { frames += grid.place(picture, at: ms(time)) }
        frames += grid.finish(at: ms(end))
        return (frames, grid)
    }

    @Test func everySlotIsFilledOnceInOrderOnTheGrid() {
        // 30 fps for 1 s: changes at 0, 100 and 420 ms, then a still screen to the end.
        let (frames, _) = movie(fps: 30, [(1, 5), (2, 100), (3, 420)], end: 1000)
        #expect(frames.map(\.index) == Array(0..<30))
        #expect(frames.map(\.time) == (0..<30).map { MediaTime.samples(Int64($0), rate: 30) })
        // 100 ms is slot 3, 420 ms slot 12.6 → 13; the still screen repeats picture 3 to the end.
        #expect(frames.map(\.picture) == Array(repeating: 1, count: 3) + Array(repeating: 2, count: 10) + Array(repeating: 3, count: 17))
        #expect(frames.filter { !$0.isRepeat }.map(\.index) == [0, 3, 13])
    }

    @Test func theMovieOpensOnTheFirstPictureEvenWhenItCameLate() {
        // The first picture 80 ms in (slot 2 at 25 fps): slots 0 and 1 show it too.
        let (frames, _) = movie(fps: 25, [(7, 80)], end: 200)
        #expect(frames.map(\.picture) == [7, 7, 7, 7, 7])
        #expect(frames.map(\.index) == [0, 1, 2, 3, 4])
        #expect(frames.map(\.isRepeat) == [true, true, false, true, true])
    }

    @Test func aSecondPictureInAFilledSlotJustShortOfTheNextTakesIt() {
        // 10 fps: 190 ms and 245 ms both round to slot 2; the newer, 5 ms short of where slot 3
        // would be its nearest, goes there, 55 ms late.
        let (frames, grid) = movie(fps: 10, [(1, 0), (2, 190), (3, 245), (4, 400)], end: 500)
        #expect(frames.map(\.picture) == [1, 1, 2, 3, 4])
        #expect(frames.map(\.index) == [0, 1, 2, 3, 4])
        #expect(grid.delayed == 1)
        #expect(grid.dropped == 0)
    }

    @Test func aSecondPictureInAFilledSlotFarFromTheNextIsDropped() {
        // 10 fps: pictures at 0, 10 and 20 ms all round to slot 0; slot 1 would be 90 and 80 ms
        // after them, so both are dropped and slot 1 repeats the first.
        let (frames, grid) = movie(fps: 10, [(1, 0), (2, 10), (3, 20), (4, 200)], end: 300)
        #expect(frames.map(\.picture) == [1, 1, 4])
        #expect(frames.map(\.index) == [0, 1, 2])
        #expect(grid.delayed == 0)
        #expect(grid.dropped == 2)
    }

    @Test func oneDoubleAtTheStartLeavesACaptureOnTheGridOnIt() {
        // A 30 fps capture right on the grid, whose first two pictures came 5 ms apart. Had the
        // second taken slot 1, every later picture would have found its own slot taken and the
        // whole movie would run a frame late.
        let onGrid: [(Int, Int64)] = (1..<30).map { (index: Int) -> (Int, Int64) in (index + 1, (Int64(index) * 1000 + 15) / 30) }
        let pictures: [(Int, Int64)] = [(0, 0), (1, 5)] + onGrid
        let (frames, grid) = movie(fps: 30, pictures, end: 1000)
        #expect(frames.map(\.index) == Array(0..<30))
        let expected: [Int] = [0] + Array(2...30)
        #expect(frames.map(\.picture) == expected)
        #expect(grid.delayed == 0)
        #expect(grid.dropped == 1)
    }

    @Test func jitterAroundHalfAFrameKeepsEveryPicture() {
        // A capture paced at 30 fps whose times sit half a slot off the grid, ±1 ms: rounding
        // alone would put pairs into one slot and leave the next one to a repeat.
        let times: [Int64] = (0..<30).map { index in
            (Int64(index) * 1000 + 500) / 30 + (index % 2 == 0 ? 1 : -1)
        }
        let (frames, grid) = movie(fps: 30, Array(zip(1...30, times)), end: 1034)
        #expect(frames.map(\.index) == Array(0..<31))
        // Slot 0 shows the first picture early (it came at 17 ms); then each picture once.
        #expect(frames.filter { !$0.isRepeat }.map(\.picture) == Array(1...30))
        #expect(frames.count { $0.isRepeat } == 1)
        #expect(grid.delayed > 0)
        #expect(grid.dropped == 0)
    }

    @Test func theEndRepeatsTheLastPictureUpToTheNearestSlot() {
        // 30 fps, stopped at 2.51 s: 75.3 slots → 75 frames.
        let (frames, grid) = movie(fps: 30, [(1, 0)], end: 2510)
        #expect(frames.count == 75)
        #expect(grid.nextIndex == 75)
        // A picture already past the end's slot: nothing added, nothing taken back.
        var late = ConstantFrameRate<Int>(fps: 30)
        _ = late.place(1, at: ms(1000))
        #expect(late.finish(at: ms(990)).isEmpty)
        #expect(late.nextIndex == 31)
    }

    @Test func nothingCapturedMakesNoFrames() {
        var grid = ConstantFrameRate<Int>(fps: 30)
        #expect(grid.finish(at: ms(5000)).isEmpty)
    }

    @Test func aRateThatDoesNotDivideASecondStaysExactOnItsGrid() {
        // 7 fps: slot times are 1/7 s apart to the nanosecond, and come back as whole frames.
        let (frames, _) = movie(fps: 7, [(1, 0), (2, 3000)], end: 10_000)
        #expect(frames.count == 70)
        #expect(frames.allSatisfy { $0.time.value(timescale: 7) == $0.index })
        #expect(frames.first { $0.picture == 2 }?.index == 21)
    }
}
