@_spi(OpenReplayKitInternal) import ReplayMedia
import Testing
@_spi(OpenReplayKitInternal) @testable import ReplayProcessing

@Suite struct VideoSourceTests {
    /// A flat picture whose luma says which frame it is.
    func frame(_ index: Int, width: Int = 640, height: Int = 360, format: PictureFormat = .bt601VideoRange) -> PixelBuffer {
        let pixels = PixelBuffer(width: width, height: height, format: format)
        pixels.mutableBytes.initializeMemory(as: UInt8.self, repeating: UInt8(16 + index % 200))
        return pixels
    }

    /// Feeds `count` frames at `fps`, starting at `start` seconds; returns the times let through.
    func feed(_ source: VideoSource, fps: Double, seconds: Double, start: Double = 0, repeats: Bool = false) -> [Double] {
        var out: [Double] = []
        let count = Int(fps * seconds)
        for index in 0..<count {
            let time = start + Double(index) / fps
            let sample = VideoSample(time: MediaTime(nanoseconds: Int64(time * 1e9)), pixels: frame(index), isRepeat: repeats)
            if let emitted = source.process(sample) { out.append(emitted.time.seconds) }
        }
        return out
    }

    @Test func fittingABoxKeepsTheAspectRatioInEvenSizes() {
        #expect(VideoFormatRequest.fit(maxDimension: 1280).size(forWidth: 1920, height: 1080) == (1280, 720))
        #expect(VideoFormatRequest.fit(maxDimension: 886).size(forWidth: 1920, height: 1080) == (886, 498))
        #expect(VideoFormatRequest.fit(maxDimension: 886).size(forWidth: 1366, height: 768) == (886, 498))
        #expect(VideoFormatRequest.fit(maxDimension: 1280).size(forWidth: 1080, height: 1920) == (720, 1280))
        #expect(VideoFormatRequest.fit(maxDimension: 1280).size(forWidth: 640, height: 480) == (640, 480), "never scaled up")
        #expect(VideoFormatRequest.native.size(forWidth: 1920, height: 1080) == (1920, 1080))
    }

    /// Scaling, rotating and repeating move pixels; the colour coding stays what it was.
    @Test func scaledRotatedAndRepeatedPicturesKeepTheirFormat() throws {
        let full709 = PictureFormat(matrix: .bt709, range: .full)
        let source = VideoSource(settings: .init(mode: .video, format: .fit(maxDimension: 320), applyRotation: true))
        let output = try #require(source.process(VideoSample(time: .zero, pixels: frame(1, format: full709), orientation: .left)))
        #expect(output.pixels.width == 180 && output.pixels.height == 320 && output.pixels.format == full709)
        let repeated = try #require(source.idle(now: MediaTime(seconds: 1)))
        #expect(repeated.pixels.format == full709)
    }

    @Test func aScaledPictureKeepsItsContent() {
        let source = VideoSource(settings: .init(mode: .video, format: .fit(maxDimension: 320)))
        let output = try! #require(source.process(VideoSample(time: .zero, pixels: frame(50))))
        #expect(output.pixels.width == 320 && output.pixels.height == 180)
        #expect(output.pixels.bytes[0] == 66 && output.pixels.bytes[320 * 180 - 1] == 66)
    }

    @Test func screencastKeepsTheNativeSizeAtAtMost15Fps() {
        let source = VideoSource(settings: .init(mode: .screencast))
        #expect(source.settings.format == .native)
        let out = feed(source, fps: 60, seconds: 4)
        #expect(abs(Double(out.count) / 4 - 15) <= 0.5, "\(out.count) frames in 4 s")
    }

    @Test func videoModeRaisesTheCapFor24FpsPlaybackAndRestoresItAfter() {
        let source = VideoSource(settings: .init(mode: .video))
        // App content at 30 fps: capped to 15.
        let app = feed(source, fps: 30, seconds: 3)
        #expect(abs(Double(app.count) / 3 - 15) <= 0.5 && !source.isPlaybackDetected)
        // A film at 24 fps: after detection every frame passes, at its own times.
        let film = feed(source, fps: 24, seconds: 5, start: 3)
        #expect(source.isPlaybackDetected && source.cap == 30)
        let lastSecond = film.filter { $0 >= 7 }
        #expect(lastSecond.count == 24, "cadence kept: \(lastSecond.count) frames in the film's last second")
        // The film ends: a still screen (capture's repeats), then app content again.
        _ = feed(source, fps: 4, seconds: 3, start: 8, repeats: true)
        #expect(!source.isPlaybackDetected && source.cap == 15)
        let after = feed(source, fps: 30, seconds: 2, start: 11)
        #expect(abs(Double(after.count) / 2 - 15) <= 0.5)
    }

    @Test func screencastNeverRaisesItsCap() {
        let source = VideoSource(settings: .init(mode: .screencast))
        let film = feed(source, fps: 24, seconds: 4)
        #expect(source.cap == 15 && film.filter { $0 >= 3 }.count <= 16)
    }

    @Test func theLastFrameIsRepeatedAfter250MsOfSilence() throws {
        let source = VideoSource(settings: .init(mode: .video))
        let first = try #require(source.process(VideoSample(time: .zero, pixels: frame(1))))
        #expect(source.idle(now: MediaTime(nanoseconds: 200_000_000)) == nil)
        let repeated = try #require(source.idle(now: MediaTime(nanoseconds: 260_000_000)))
        #expect(repeated.time.nanoseconds == 260_000_000 && repeated.isRepeat)
        #expect(repeated.pixels.storage === first.pixels.storage)
        #expect(source.idle(now: MediaTime(nanoseconds: 400_000_000)) == nil)
        #expect(source.idle(now: MediaTime(nanoseconds: 520_000_000)) != nil)
    }

    @Test func rotationTagsPassThroughOrAreApplied() throws {
        // A 4x2 picture whose top-left luma is bright.
        let pixels = PixelBuffer(width: 4, height: 2, format: .bt601VideoRange)
        pixels.mutableBytes.initializeMemory(as: UInt8.self, repeating: 16)
        pixels.mutableBytes[0] = 235
        let tagged = VideoSample(time: .zero, pixels: pixels, orientation: .right)
        let passed = try #require(VideoSource(settings: .init(mode: .video, format: .native)).process(tagged))
        #expect(passed.orientation == .right && passed.pixels.width == 4)
        let applied = try #require(VideoSource(settings: .init(mode: .video, format: .native, applyRotation: true)).process(tagged))
        #expect(applied.orientation == .up && applied.pixels.width == 2 && applied.pixels.height == 4)
        // Turned 90° clockwise, the top-left corner goes to the top-right.
        #expect(applied.pixels.bytes[1] == 235 && applied.pixels.bytes[0] == 16)
    }
}
