@testable import ReplayCapture
import Testing

/// The sizes of a monitor, window or region capture: the movie keeps the first size, later
/// sizes are fitted, and only what is on the screen is grabbed.
@Suite struct AreaFramingTests {
    let screen = PixelRect(x: 0, y: 0, width: 1920, height: 1080)

    @Test func picturesKeepTheFirstSizeRoundedDownToEven() {
        let framing = AreaFraming(first: PixelRect(x: 5, y: 7, width: 401, height: 301))
        #expect(framing.pictureSize.width == 400 && framing.pictureSize.height == 300)
        #expect(!framing.needsFitting(PixelRect(x: 900, y: 100, width: 400, height: 301)))
        #expect(framing.needsFitting(PixelRect(x: 5, y: 7, width: 600, height: 300)))
    }

    @Test func onlyWhatIsOnTheScreenIsGrabbed() {
        #expect(AreaFraming.grabbed(PixelRect(x: 1800, y: 1000, width: 400, height: 300), screen: screen)
                == PixelRect(x: 1800, y: 1000, width: 120, height: 80))
        #expect(AreaFraming.grabbed(PixelRect(x: -100, y: 0, width: 400, height: 300), screen: screen)
                == PixelRect(x: 0, y: 0, width: 300, height: 300))
        // Off the screen, or hidden (an empty place): nothing to grab.
        #expect(AreaFraming.grabbed(PixelRect(x: 2000, y: 0, width: 400, height: 300), screen: screen) == nil)
        #expect(AreaFraming.grabbed(PixelRect(x: 0, y: 0, width: 0, height: 0), screen: screen) == nil)
        #expect(AreaFraming.grabbed(PixelRect(x: 1919, y: 0, width: 400, height: 300), screen: screen) == nil)
    }

    @Test func aRegionMustLieOnTheScreen() throws {
        try AreaFraming.validate(region: PixelRect(x: 0, y: 0, width: 1920, height: 1080), screen: screen)
        try AreaFraming.validate(region: PixelRect(x: 1520, y: 680, width: 400, height: 400), screen: screen)
        for region in [PixelRect(x: 1521, y: 680, width: 400, height: 400), PixelRect(x: 0, y: 0, width: 1, height: 100),
                       PixelRect(x: -1, y: 0, width: 100, height: 100)] {
            #expect(throws: CaptureError.self) { try AreaFraming.validate(region: region, screen: screen) }
        }
    }
}
