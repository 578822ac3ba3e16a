public import COpenReplayKit
@_spi(OpenReplayKitInternal) import OpenReplayKit

@_cdecl("ork_window_protect")
public func ork_window_protect(_ handle: OpaquePointer?, _ window: UInt32, _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let recorder = try client(handle).recorder
        guard window != 0 else { throw CFailure(.invalidArgument, "window 0 is no window") }
        try runBlocking { () async throws(RecordingError) in try await recorder.protect(window: window) }
    }
}

@_cdecl("ork_window_unprotect")
public func ork_window_unprotect(_ handle: OpaquePointer?, _ window: UInt32, _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let recorder = try client(handle).recorder
        guard window != 0 else { throw CFailure(.invalidArgument, "window 0 is no window") }
        try runBlocking { () async throws(RecordingError) in try await recorder.unprotect(window: window) }
    }
}

@_cdecl("ork_recording_start")
public func ork_recording_start(_ handle: OpaquePointer?, _ window: UInt32, _ microphone: Int32,
                                _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let recorder = try client(handle).recorder
        recorder.isMicrophoneEnabled = microphone != 0
        let filter: ContentFilter = window == 0 ? .screen : .window(window)
        try runBlocking { () async throws(RecordingError) in try await recorder.startRecording(filter: filter) }
    }
}

@_cdecl("ork_recording_stop")
public func ork_recording_stop(_ handle: OpaquePointer?, _ recording: UnsafeMutablePointer<ork_recording>?,
                               _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let recorder = try client(handle).recorder
        let preview = try runBlocking { () async throws(RecordingError) in try await recorder.stopRecording() }
        guard let recording else { return }
        let id = Array(preview.recordingID.utf8)
        guard id.count < Int(ORK_RECORDING_ID_SIZE) else {
            throw CFailure(.unknown, "the recording's id (\(id.count) bytes) does not fit ork_recording.id; it was kept in the store")
        }
        withUnsafeMutableBytes(of: &recording.pointee.id) { bytes in
            bytes.initializeMemory(as: UInt8.self, repeating: 0)
            bytes.copyBytes(from: id)
        }
        recording.pointee.duration = preview.duration
        recording.pointee.frames = Int64(preview.frames ?? 0)
    }
}

@_cdecl("ork_recording_show_preview")
public func ork_recording_show_preview(_ handle: OpaquePointer?, _ id: UnsafePointer<CChar>?,
                                       _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let recorder = try client(handle).recorder
        let preview = PreviewHandle(recordingID: try string(id, "recording_id"), duration: 0)
        try runBlocking { () async throws(RecordingError) in try await preview.show(recorder: recorder) }
    }
}

@_cdecl("ork_recording_discard")
public func ork_recording_discard(_ handle: OpaquePointer?, _ id: UnsafePointer<CChar>?,
                                  _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let recorder = try client(handle).recorder
        let preview = PreviewHandle(recordingID: try string(id, "recording_id"), duration: 0)
        try runBlocking { () async throws(RecordingError) in try await recorder.discardRecording(preview) }
    }
}
