@testable import ReplayCapture
import Testing

/// What the portal's damage metadata lets a conversion skip.
@Suite struct DamageTrackerTests {
    typealias Rect = DamageTracker.Rect

    @Test func nothingIsKnownAtFirstSoTheFirstPictureIsConvertedWhole() {
        var damage = DamageTracker()
        #expect(damage.takeParts(width: 640, height: 480) == nil)
        // From then on only what frames say changed.
        damage.add([Rect(x: 10, y: 10, width: 20, height: 20)])
        #expect(damage.takeParts(width: 640, height: 480) == [Rect(x: 10, y: 10, width: 20, height: 20)])
    }

    @Test func framesDroppedForANewerOneStillCount() {
        var damage = DamageTracker()
        _ = damage.takeParts(width: 640, height: 480)
        damage.add([Rect(x: 0, y: 0, width: 10, height: 10)])
        damage.add([Rect(x: 100, y: 100, width: 10, height: 10)])
        #expect(damage.takeParts(width: 640, height: 480) == [Rect(x: 0, y: 0, width: 10, height: 10), Rect(x: 100, y: 100, width: 10, height: 10)])
        #expect(damage.takeParts(width: 640, height: 480) == [], "taken: nothing pending")
    }

    @Test func aFrameWithoutDamageMakesTheNextPictureWhole() {
        var damage = DamageTracker()
        _ = damage.takeParts(width: 640, height: 480)
        damage.add([Rect(x: 0, y: 0, width: 10, height: 10)])
        damage.add(nil)
        damage.add([Rect(x: 100, y: 100, width: 10, height: 10)])
        #expect(damage.takeParts(width: 640, height: 480) == nil)
    }

    @Test func aNewFormatMakesTheNextPictureWhole() {
        var damage = DamageTracker()
        _ = damage.takeParts(width: 640, height: 480)
        damage.add([Rect(x: 0, y: 0, width: 10, height: 10)])
        damage.invalidate()
        #expect(damage.takeParts(width: 640, height: 480) == nil)
    }

    @Test func halfTheScreenOrMoreIsConvertedWhole() {
        var damage = DamageTracker()
        _ = damage.takeParts(width: 100, height: 100)
        damage.add([Rect(x: 0, y: 0, width: 100, height: 48)])
        #expect(damage.takeParts(width: 100, height: 100) != nil)
        damage.add([Rect(x: 0, y: 0, width: 100, height: 50)])
        #expect(damage.takeParts(width: 100, height: 100) == nil)
    }

    @Test func partsAreGrownToEvenEdgesAndClippedToThePicture() {
        #expect(DamageTracker.evenClip(Rect(x: 3, y: 5, width: 4, height: 2), width: 640, height: 480) == Rect(x: 2, y: 4, width: 6, height: 4))
        #expect(DamageTracker.evenClip(Rect(x: -5, y: 470, width: 20, height: 40), width: 640, height: 480) == Rect(x: 0, y: 470, width: 16, height: 10))
        #expect(DamageTracker.evenClip(Rect(x: 700, y: 0, width: 20, height: 20), width: 640, height: 480) == nil)
    }

    @Test func manyPartsBecomeTheirBoundingBox() {
        var damage = DamageTracker()
        _ = damage.takeParts(width: 640, height: 480)
        for index in 0...DamageTracker.limit { damage.add([Rect(x: index * 10, y: index, width: 2, height: 2)]) }
        #expect(damage.takeParts(width: 640, height: 480) == [Rect(x: 0, y: 0, width: DamageTracker.limit * 10 + 2, height: DamageTracker.limit + 2)])
    }
}
