import FoundationEssentials
import OpenReplayKit

@_cdecl("ork_clip_buffering_start")
public func ork_clip_buffering_start(_ handle: OpaquePointer?, _ seconds: Double, _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let recorder = try client(handle).recorder
        guard seconds >= 1, seconds <= 3600 else { throw CFailure(.invalidArgument, "seconds must be 1 to 3600, not \(seconds)") }
        try runBlocking { () async throws(RecordingError) in try await recorder.startClipBuffering(length: seconds) }
    }
}

@_cdecl("ork_clip_export")
public func ork_clip_export(_ handle: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ seconds: Double,
                            _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let recorder = try client(handle).recorder
        let url = URL(fileURLWithPath: try string(path, "path"))
        guard seconds > 0, seconds.isFinite else { throw CFailure(.invalidArgument, "seconds must be positive, not \(seconds)") }
        try runBlocking { () async throws(RecordingError) in try await recorder.exportClip(to: url, duration: seconds) }
    }
}

@_cdecl("ork_clip_buffering_stop")
public func ork_clip_buffering_stop(_ handle: OpaquePointer?, _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let recorder = try client(handle).recorder
        try runBlocking { () async throws(RecordingError) in try await recorder.stopClipBuffering() }
    }
}
