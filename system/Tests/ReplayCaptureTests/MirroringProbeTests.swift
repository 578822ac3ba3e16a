@testable import ReplayCapture
import Testing

@Suite struct MirroringProbeTests {
    let laptop = PixelRect(x: 0, y: 0, width: 1920, height: 1080)

    @Test func oneScreenOrScreensSideBySideAreNotMirrored() {
        #expect(!MirroringProbe.isMirrored([.init(area: laptop, outputs: 1)]))
        #expect(!MirroringProbe.isMirrored([.init(area: laptop, outputs: 1),
                                            .init(area: PixelRect(x: 1920, y: 0, width: 1280, height: 1024), outputs: 1)]))
        #expect(!MirroringProbe.isMirrored([]))
    }

    @Test func aCloneOnOneCRTCOrTwoCRTCsOnTheSameAreaAreMirrored() {
        #expect(MirroringProbe.isMirrored([.init(area: laptop, outputs: 2)]))
        #expect(MirroringProbe.isMirrored([.init(area: laptop, outputs: 1), .init(area: laptop, outputs: 1)]))
    }

    @Test func aCRTCWithNoOutputDoesNotCount() {
        #expect(!MirroringProbe.isMirrored([.init(area: laptop, outputs: 1), .init(area: laptop, outputs: 0)]))
    }

    @Test func theVirtualDisplayHereIsNotMirrored() throws {
        // Xvfb has one output and cannot clone it: the live probe must say "not mirrored".
        let server = try WindowStackTests.Xvfb()
        defer { server.stop() }
        #expect(try MirroringProbe(displayName: server.display).isMirroring() == false)
    }
}
