import Foundation
import ReplaySystem
import ReplayTesting
import ReplayVirtualDesktop
import Testing

extension IntegrationTests {
    /// DMA-BUF buffers from a PipeWire producer. This machine has no GPU, so no compositor here
    /// sends one; the producer is our test source, which announces and types shared memory as
    /// a DMA-BUF (see Tests/PipeWireTestSource). What runs for real: PipeWire's DMA-BUF
    /// negotiation (modifiers, the producer's fixation, the buffer type) and replayd mapping
    /// and reading the descriptor. The camera path and the screen path read through the same
    /// stream, so the test goes through replayd's camera, which can name a node.
    @Suite struct DmaBufCapture {
        static let red = "E02020"
        static func isRed(_ c: DecodedFrame.RGB) -> Bool { c.r > 190 && c.g < 70 && c.b < 70 }

        /// Starts the test source as node `name`, offering `offer` (dmabuf, tiled, both, shm).
        static func startSource(_ fixture: ReplayFixture, name: String, offer: String) throws -> RunningCommand {
            try fixture.start(VirtualDesktop.siblingExecutable("replay-pipewire-test-source").path,
                              ["--name", name, "--offer", offer, "--colour", red, "--size", "320x240"])
        }

        /// Records 2 s with the node as the camera, retrying while PipeWire does not list it yet.
        static func record(_ fixture: ReplayFixture, camera: String, to movie: URL) throws -> CommandResult {
            var attempt: CommandResult?
            for _ in 0..<20 {
                // --no-notify: the test desktop has no notification server, which would be a warning too.
                attempt = try fixture.replay(["record", "--duration", "2", "--no-app-audio", "--camera-device", camera,
                                              "--output", movie.path, "--force", "--no-notify"], timeout: 60)
                if attempt?.stderr.contains("no camera named") == false { break }
                Thread.sleep(forTimeInterval: 0.5)
            }
            return try #require(attempt)
        }

        @Test func aLinearDMABufIsMappedAndReadAndSharedMemoryIsPreferred() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(width: 640, height: 480, audio: false, scene: nil))
            defer { fixture.stop() }
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path])

            // A producer that sends only DMA-BUF: replayd agrees on the linear modifier and reads it.
            let dmabuf = try Self.startSource(fixture, name: "test-dmabuf", offer: "dmabuf")
            defer { dmabuf.process.terminate() }
            let movie = fixture.file("dmabuf.mp4")
            let result = try Self.record(fixture, camera: "test-dmabuf", to: movie)
            #expect(result.status == 0 && !result.stderr.contains("warning"), "\(result)\n\(fixture.daemonLog.suffix(2000))")
            #expect(dmabuf.outputSoFar.contains("buffers dmabuf modifier 0x0"), "the source says: \(dmabuf.outputSoFar)")
            let frame = try DecodedFrame(movie, at: 1.5, width: 640, height: 480)
            // 25% of 640: 160x120 in the bottom-right corner, 12 pixels in.
            #expect(frame.fraction(x: 472, y: 352, width: 152, height: 112, Self.isRed) > 0.95, "camera: \(frame.pixel(x: 548, y: 408))")
            dmabuf.process.terminate()

            // A producer that sends both, DMA-BUF first as mutter lists them: replayd takes shared
            // memory, which the CPU reads fast (a GPU's DMA-BUF is uncached to it).
            let both = try Self.startSource(fixture, name: "test-both", offer: "both")
            defer { both.process.terminate() }
            let bothMovie = fixture.file("both.mp4")
            let bothResult = try Self.record(fixture, camera: "test-both", to: bothMovie)
            #expect(bothResult.status == 0 && !bothResult.stderr.contains("warning"), "\(bothResult)")
            #expect(both.outputSoFar.contains("buffers memfd"), "the source says: \(both.outputSoFar)")
            let bothFrame = try DecodedFrame(bothMovie, at: 1.5, width: 640, height: 480)
            #expect(bothFrame.fraction(x: 472, y: 352, width: 152, height: 112, Self.isRed) > 0.95)
        }

        /// A producer that can send only a tiled DMA-BUF (a GPU's own layout, which the CPU cannot
        /// read without that GPU's driver): nothing is agreed, and the person is told why.
        @Test func aTiledOnlyProducerIsRefusedWithAReason() throws {
            let fixture = try ReplayFixture(wayland: WaylandDesktop.Options(width: 640, height: 480, audio: false, scene: nil))
            defer { fixture.stop() }
            try fixture.startDaemon(["--capture", "portal", "--portal-token-file", fixture.portalTokenFile.path])
            let tiled = try Self.startSource(fixture, name: "test-tiled", offer: "tiled")
            defer { tiled.process.terminate() }
            Thread.sleep(forTimeInterval: 1)
            let result = try fixture.replay(["record", "--duration", "1", "--no-app-audio", "--camera-device", "test-tiled",
                                             "--output", fixture.file("refused.mp4").path], timeout: 60)
            // The recording goes on without the camera, keeps the screen, and says why: the modifier
            // the source offers (Intel's X-tiling) is named, and what replayd reads instead.
            #expect(result.status == 0, "\(result)\n\(fixture.daemonLog.suffix(2000))")
            #expect(result.stderr.contains("camera not drawn in: the camera 'test-tiled' cannot be read: it sends only DMA-BUF "
                                           + "in a GPU's tiled layout (modifier 0x100000000000001)"), "\(result)")
            #expect(!tiled.outputSoFar.contains("buffers"), "buffers were agreed: \(tiled.outputSoFar)")
        }
    }
}
