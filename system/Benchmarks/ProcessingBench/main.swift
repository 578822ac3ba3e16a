import Foundation
@_spi(OpenReplayKitInternal) import ReplayMedia
@_spi(OpenReplayKitInternal) import ReplayProcessing

/// Times, per 1920x1080 I420 frame, what the live video source does to every frame:
/// exact duplicate detection (inverse telecine) and downscaling to 1280x720 (libyuv box).
/// Prints one JSON object; writes the frames it used to the file given, so that ffmpeg can
/// be timed on the very same pictures (bench/processing does both).
let output = CommandLine.arguments.dropFirst().first
let (width, height, count) = (1920, 1080, 120)

/// Noise, not flat colours: comparisons and filters must see real work (xorshift).
func noisyFrame(_ state: inout UInt64) -> PixelBuffer {
    let pixels = PixelBuffer(width: width, height: height, format: .bt601VideoRange)
    let words = pixels.mutableBytes.bindMemory(to: UInt64.self)
    for index in words.indices {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        words[index] = state
    }
    return pixels
}

func cpuSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// CPU milliseconds per call of `body`, the median of five rounds over every frame.
func measure(_ frames: [PixelBuffer], _ body: (Int) -> Void) -> Double {
    var rounds: [Double] = []
    for _ in 0..<5 {
        let start = cpuSeconds()
        for index in frames.indices { body(index) }
        rounds.append((cpuSeconds() - start) * 1000 / Double(frames.count))
    }
    return rounds.sorted()[2]
}

var noise: UInt64 = 0x9e37_79b9_7f4a_7c15
let frames = (0..<count).map { _ in noisyFrame(&noise) }
// A copy of each frame, so "identical" really means comparing every byte of two pictures.
let copies = frames.map { frame -> PixelBuffer in
    let copy = PixelBuffer(width: width, height: height, format: frame.format)
    copy.mutableBytes.copyMemory(from: frame.bytes)
    return copy
}
var duplicates = 0
let differentCost = measure(frames) { if InverseTelecine.isDuplicate(frames[$0], frames[($0 + 1) % count]) { duplicates += 1 } }
let identicalCost = measure(frames) { if InverseTelecine.isDuplicate(frames[$0], copies[$0]) { duplicates += 1 } }
let transform = PictureTransform()
let scaleCost = measure(frames) { _ = transform.scale(frames[$0], width: 1280, height: 720) }
precondition(duplicates == 5 * count, "every identical pair, and only those, is a duplicate")

if let output {
    _ = FileManager.default.createFile(atPath: output, contents: nil)
    let handle = FileHandle(forWritingAtPath: output)!
    for frame in frames { handle.write(Data(UnsafeRawBufferPointer(frame.bytes))) }
    try handle.close()
}
print(#"{"frames": \#(count), "duplicate_check_different_ms": \#(differentCost), "duplicate_check_identical_ms": \#(identicalCost), "scale_1080p_to_720p_ms": \#(scaleCost)}"#)
