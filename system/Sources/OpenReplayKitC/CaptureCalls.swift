public import COpenReplayKit
import OpenReplayKit
import ReplayMedia

public typealias FrameCallback = @convention(c) (OpaquePointer?, UnsafePointer<ork_frame>?, UnsafeMutableRawPointer?) -> Void

extension ork_frame {
    /// The header's picture, pointing into `frame`'s pixels (valid while `frame` lives).
    init(_ frame: CapturedFrame, base: UnsafeRawPointer) {
        let pixels = frame.pixels
        let plane = { (index: Int) in base.advanced(by: pixels.offset(ofPlane: index)).assumingMemoryBound(to: UInt8.self) }
        self.init(width: Int32(pixels.width), height: Int32(pixels.height), time_ns: frame.time.nanoseconds,
                  format: UInt32(ORK_PIXEL_FORMAT_I420), plane_count: 3,
                  planes: (plane(0), plane(1), plane(2)),
                  strides: (Int32(pixels.stride(ofPlane: 0)), Int32(pixels.stride(ofPlane: 1)), Int32(pixels.stride(ofPlane: 2))),
                  plane_heights: (Int32(pixels.height(ofPlane: 0)), Int32(pixels.height(ofPlane: 1)), Int32(pixels.height(ofPlane: 2))))
    }
}

@_cdecl("ork_capture_start")
public func ork_capture_start(_ handle: OpaquePointer?, _ fps: Int32, _ callback: FrameCallback?, _ userData: UnsafeMutableRawPointer?,
                              _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let client = try client(handle)
        guard let callback else { throw CFailure(.invalidArgument, "the frame callback is NULL") }
        guard (1...60).contains(fps) else { throw CFailure(.invalidArgument, "fps must be 1 to 60, not \(fps)") }
        let recorder = client.recorder
        let frames = try runBlocking { () async throws(RecordingError) in try await recorder.startCapture(fps: Int(fps)) }
        let user = UserData(pointer: userData)
        let generation = client.replace(.frame)
        client.install(.frame, generation, Task {
            do {
                for try await frame in frames {
                    client.post(.frame, generation) { handle in
                        withExtendedLifetime(frame) {
                            var picture = ork_frame(frame, base: frame.pixels.baseAddress)
                            callback(handle, &picture, user.pointer)
                        }
                    }
                }
            } catch {}
            // Ended by itself (not by ork_capture_stop, which cancels this task first).
            if !Task.isCancelled { client.post(.frame, generation) { callback($0, nil, user.pointer) } }
        })
    }
}

@_cdecl("ork_capture_stop")
public func ork_capture_stop(_ handle: OpaquePointer?, _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let client = try client(handle)
        let recorder = client.recorder
        // First no more callbacks (the stream's end is no "ended by itself"), then the capture.
        client.replace(.frame)
        try runBlocking { () async throws(RecordingError) in try await recorder.stopCapture() }
    }
}

@_cdecl("ork_capture_dropped_frames")
public func ork_capture_dropped_frames(_ handle: OpaquePointer?, _ dropped: UnsafeMutablePointer<UInt64>?,
                                       _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let client = try client(handle)
        guard let dropped else { throw CFailure(.invalidArgument, "dropped is NULL") }
        dropped.pointee = client.callbacks.droppedFrames
    }
}
