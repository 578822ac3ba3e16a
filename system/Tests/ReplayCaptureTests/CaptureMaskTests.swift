@testable import ReplayCapture
import Testing

@Suite struct CaptureMaskTests {
    let screen = PixelRect(x: 0, y: 0, width: 200, height: 200)

    /// Which pixels of `screen` the disjoint `rects` cover, counting overlaps so that a
    /// region drawn twice shows up.
    func coverage(_ rects: [PixelRect]) -> [Int] {
        var cells = [Int](repeating: 0, count: screen.width * screen.height)
        for rect in rects {
            for y in rect.y..<rect.y + rect.height {
                for x in rect.x..<rect.x + rect.width { cells[y * screen.width + x] += 1 }
            }
        }
        return cells
    }

    func coverage(where inside: (Int, Int) -> Bool) -> [Int] {
        (0..<screen.width * screen.height).map { inside($0 % screen.width, $0 / screen.width) ? 1 : 0 }
    }

    @Test func subtractingAHoleLeavesFourDisjointBands() {
        let rect = PixelRect(x: 0, y: 0, width: 10, height: 10)
        #expect(rect.subtracting(PixelRect(x: 3, y: 4, width: 2, height: 5)) == [
            PixelRect(x: 0, y: 0, width: 10, height: 4),
            PixelRect(x: 0, y: 9, width: 10, height: 1),
            PixelRect(x: 0, y: 4, width: 3, height: 5),
            PixelRect(x: 5, y: 4, width: 5, height: 5),
        ])
    }

    @Test func subtractingAnOverhangingRectLeavesOnlyWhatIsOutsideIt() {
        let rect = PixelRect(x: 0, y: 0, width: 10, height: 10)
        #expect(rect.subtracting(PixelRect(x: 5, y: -5, width: 20, height: 30)) == [PixelRect(x: 0, y: 0, width: 5, height: 10)])
        #expect(rect.subtracting(PixelRect(x: 20, y: 20, width: 5, height: 5)) == [rect])
        #expect(rect.subtracting(PixelRect(x: -1, y: -1, width: 12, height: 12)).isEmpty)
        #expect(rect.intersection(PixelRect(x: 20, y: 0, width: 5, height: 5)).isEmpty)
    }

    @Test func aProtectedWindowHalfCoveredByAWindowAboveIsBlackOnlyWhereVisible() {
        let windows = [
            StackedWindow(id: 1, frame: PixelRect(x: 0, y: 0, width: 100, height: 100), ownerPID: 10),
            StackedWindow(id: 2, frame: PixelRect(x: 50, y: 0, width: 100, height: 100), ownerPID: 20),
        ]
        let mask = CaptureMask(windows: windows, filter: .everything, protected: [1], screen: screen)
        #expect(mask.keep == nil)
        #expect(mask.black == [PixelRect(x: 0, y: 0, width: 50, height: 100)])
    }

    @Test func aTranslucentWindowAboveAProtectedOneDoesNotUncoverIt() {
        let windows = [
            StackedWindow(id: 1, frame: PixelRect(x: 0, y: 0, width: 100, height: 100), ownerPID: 10),
            StackedWindow(id: 2, frame: PixelRect(x: 50, y: 0, width: 100, height: 100), ownerPID: 20, isOpaque: false),
        ]
        let mask = CaptureMask(windows: windows, filter: .everything, protected: [1], screen: screen)
        #expect(mask.black == [PixelRect(x: 0, y: 0, width: 100, height: 100)])
    }

    @Test func aWindowIsProtectedByTheIdOfTheApplicationWindowInsideItsFrame() {
        let windows = [StackedWindow(id: 1, clientWindow: 7, frame: PixelRect(x: 10, y: 10, width: 20, height: 20), ownerPID: 10)]
        let mask = CaptureMask(windows: windows, filter: .everything, protected: [7], screen: screen)
        #expect(mask.black == [PixelRect(x: 10, y: 10, width: 20, height: 20)])
        #expect(CaptureMask(windows: windows, filter: .everything, protected: [], screen: screen).isEmpty)
    }

    @Test func onlyProcessKeepsOnlyTheVisiblePartsOfThatProcesssWindows() {
        let windows = [
            StackedWindow(id: 1, frame: PixelRect(x: 0, y: 0, width: 100, height: 100), ownerPID: 10),
            StackedWindow(id: 2, frame: PixelRect(x: 50, y: 50, width: 100, height: 100), ownerPID: 20),
            StackedWindow(id: 3, frame: PixelRect(x: 120, y: 120, width: 30, height: 30), ownerPID: 10),
            StackedWindow(id: 4, frame: PixelRect(x: 180, y: 0, width: 40, height: 10), ownerPID: 10),
        ]
        let mask = CaptureMask(windows: windows, filter: .onlyProcess(10), protected: [], screen: screen)
        #expect(mask.black.isEmpty)
        let expected = coverage { x, y in
            let inFirst = x < 100 && y < 100 && !(x >= 50 && y >= 50)
            let inThird = (120..<150).contains(x) && (120..<150).contains(y)
            let inFourth = x >= 180 && y < 10  // clipped to the screen
            return inFirst || inThird || inFourth
        }
        #expect(coverage(mask.keep ?? []) == expected)
    }

    /// A window of another client inside the app's own (reparented into it) is not the app's.
    @Test func onlyProcessBlacksOutAnotherClientsWindowInsideItsOwn() {
        let windows = [
            StackedWindow(id: 1, frame: PixelRect(x: 0, y: 0, width: 100, height: 100), ownerPID: 10,
                          foreignParts: [PixelRect(x: 10, y: 10, width: 30, height: 20), PixelRect(x: 90, y: 90, width: 200, height: 200)]),
        ]
        let mask = CaptureMask(windows: windows, filter: .onlyProcess(10), protected: [], screen: screen)
        #expect(coverage(mask.keep ?? []) == coverage { x, y in
            x < 100 && y < 100 && !((10..<40).contains(x) && (10..<30).contains(y)) && !(x >= 90 && y >= 90)
        })
        // Another process's foreign parts change nothing of what this one keeps.
        let others = CaptureMask(windows: windows, filter: .onlyProcess(20), protected: [], screen: screen)
        #expect(others.keep == [])
    }

    @Test func onlyProcessBlacksOutItsOwnProtectedWindows() {
        let windows = [
            StackedWindow(id: 1, frame: PixelRect(x: 0, y: 0, width: 100, height: 100), ownerPID: 10),
            StackedWindow(id: 2, frame: PixelRect(x: 20, y: 20, width: 10, height: 10), ownerPID: 10),
        ]
        let mask = CaptureMask(windows: windows, filter: .onlyProcess(10), protected: [2], screen: screen)
        #expect(mask.black == [PixelRect(x: 20, y: 20, width: 10, height: 10)])
        #expect(coverage(mask.keep ?? []) == coverage { x, y in x < 100 && y < 100 && !((20..<30).contains(x) && (20..<30).contains(y)) })
    }

    /// A 4x3 picture with two bytes of padding per row, every byte 0xff before masking.
    func masked(_ mask: CaptureMask) -> [UInt8] {
        var bytes = [UInt8](repeating: 0xff, count: 18 * 3)
        bytes.withUnsafeMutableBytes { mask.apply(to: $0.baseAddress!, bytesPerRow: 18) }
        return bytes
    }

    @Test func applyBlacksOutExactlyThePixelsOutsideKeep() {
        let picture = PixelRect(x: 0, y: 0, width: 4, height: 3)
        let bytes = masked(CaptureMask(keep: [PixelRect(x: 1, y: 0, width: 2, height: 2)], black: [], screen: picture))
        let K: [UInt8] = [0xff, 0xff, 0xff, 0xff], B: [UInt8] = [0, 0, 0, 0], padding: [UInt8] = [0xff, 0xff]
        #expect(bytes == B + K + K + B + padding
                       + B + K + K + B + padding
                       + B + B + B + B + padding)
    }

    @Test func applyBlacksOutExactlyTheBlackPixels() {
        let picture = PixelRect(x: 0, y: 0, width: 4, height: 3)
        let black = [PixelRect(x: 0, y: 1, width: 2, height: 1), PixelRect(x: 3, y: 2, width: 5, height: 5)]
        let bytes = masked(CaptureMask(keep: nil, black: black, screen: picture))
        let K: [UInt8] = [0xff, 0xff, 0xff, 0xff], B: [UInt8] = [0, 0, 0, 0], padding: [UInt8] = [0xff, 0xff]
        #expect(bytes == K + K + K + K + padding
                       + B + B + K + K + padding
                       + K + K + K + B + padding)
    }

    @Test func anEmptyKeepListBlacksOutEverything() {
        let bytes = masked(CaptureMask(keep: [], black: [], screen: PixelRect(x: 0, y: 0, width: 4, height: 3)))
        for row in 0..<3 {
            #expect(bytes[row * 18..<row * 18 + 16].allSatisfy { $0 == 0 })
        }
    }
}
