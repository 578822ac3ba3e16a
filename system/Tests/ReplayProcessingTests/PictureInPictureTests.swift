import ReplayMedia
import ReplayProcessing
import Testing

/// Where the camera's picture goes in a recording's.
@Suite struct PictureInPictureTests {
    func place(_ corner: PictureInPicture.Corner, _ fraction: Double = 0.25, camera: (Int, Int) = (640, 480),
               frame: (Int, Int) = (1920, 1080)) -> [Int]? {
        PictureInPicture(corner: corner, widthFraction: fraction).place(camera: camera, in: frame).map { [$0.x, $0.y, $0.width, $0.height] }
    }

    @Test func aQuarterOfTheWidthInEachCornerWithItsShapeKept() {
        // 480 wide, 360 high for a 4:3 camera; the margin is 2% of 1920, rounded down to even: 38.
        #expect(place(.bottomRight) == [1920 - 38 - 480, 1080 - 38 - 360, 480, 360])
        #expect(place(.topLeft) == [38, 38, 480, 360])
        #expect(place(.topRight) == [1920 - 38 - 480, 38, 480, 360])
        #expect(place(.bottomLeft) == [38, 1080 - 38 - 360, 480, 360])
    }

    @Test func everyEdgeIsEvenForFourTwoZero() {
        // 0.25 of 1278 is 319.5, and a 16:9 camera makes it 178.875 high.
        let place = place(.bottomRight, camera: (1280, 720), frame: (1278, 718))
        #expect(place?.allSatisfy { $0 % 2 == 0 } == true, "\(String(describing: place))")
    }

    @Test func sizesAreClampedAndAPictureTooSmallIsNotPlaced() {
        #expect(PictureInPicture(widthFraction: 0.9).widthFraction == 0.5)
        #expect(PictureInPicture(widthFraction: 0).widthFraction == 0.05)
        // A 1:2 portrait camera half as wide as the movie (320x640) would not fit its height.
        #expect(place(.topLeft, 0.5, camera: (480, 960), frame: (640, 480)) == nil)
        #expect(place(.topLeft, camera: (0, 0)) == nil)
        #expect(place(.topLeft, 0.05, frame: (200, 150)) == nil)
    }
}
