import Foundation
import ReplayCodec
@_spi(OpenReplayKitInternal) import ReplayMedia
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Smart trim against a forced whole re-encode of a 60 s 720p movie; run with
/// TRIM_BENCH=1 (it takes a minute), figures printed.
@Suite struct TrimBenchmark {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["TRIM_BENCH"] == "1"))
    func smartTrimAgainstWholeReencode() throws {
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString).mp4")
        defer { try? FileManager.default.removeItem(at: source) }
        let writer = try MovieWriter(path: source.path, format: MovieFormat(width: 1280, height: 720, picture: .bt601VideoRange, fps: 30,
                                                                            audioSources: [.app]))
        for index in 0..<1800 {
            let pixels = PixelBuffer(width: 1280, height: 720, format: .bt601VideoRange)
            // A moving pattern with a static part, as screen content has.
            for y in 0..<720 { for x in 0..<1280 { pixels.mutableBytes[y * 1280 + x] = y < 360 ? UInt8((x ^ y) & 0xff) : UInt8((x + y + index * 2) & 0xff) } }
            for chroma in pixels.offset(ofPlane: 1)..<pixels.bytes.count { pixels.mutableBytes[chroma] = 128 }
            try writer.append(VideoSample(time: .zero, pixels: pixels), at: MediaTime(seconds: Double(index) / 30))
        }
        try writer.append(audio: [Float](repeating: 0.1, count: 48_000 * 60 * 2), source: .app)
        try writer.finish()
        for (from, whole) in [(10.0, false), (10.0, true), (10.5, false), (10.5, true)] {
            let output = FileManager.default.temporaryDirectory.appendingPathComponent("bench-out-\(UUID().uuidString).mp4")
            defer { try? FileManager.default.removeItem(at: output) }
            let (cpu0, wall0) = (Self.cpu(), Date())
            let report = try MovieTrimmer.trim(source.path, to: output.path, from: from, to: 50, container: .mp4, reencodeWhole: whole)
            let (cpu, wall) = (Self.cpu() - cpu0, Date().timeIntervalSince(wall0))
            print("TRIM-BENCH \(from)–50 s \(whole ? "whole" : "smart"): wall \(String(format: "%.2f", wall)) s, cpu \(String(format: "%.2f", cpu)) s, \(report)")
        }
    }

    static func cpu() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
