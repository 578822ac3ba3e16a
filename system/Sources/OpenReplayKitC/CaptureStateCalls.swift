import COpenReplayKit
import OpenReplayKit

extension CaptureStatus {
    /// The header's `ORK_CAPTURED_*` bits.
    var bits: UInt32 {
        reasons.reduce(0) { bits, reason in bits | Self.bit(reason) }
    }

    static func bit(_ reason: CaptureReason) -> UInt32 {
        switch reason {
        case .screenRecording: UInt32(ORK_CAPTURED_SCREEN_RECORDING)
        case .broadcast: UInt32(ORK_CAPTURED_BROADCAST)
        case .mirroring: UInt32(ORK_CAPTURED_MIRRORING)
        case .inAppCapture: UInt32(ORK_CAPTURED_IN_APP_CAPTURE)
        default: UInt32(ORK_CAPTURED_OTHER)
        }
    }
}

@_cdecl("ork_capture_state_get")
public func ork_capture_state_get(_ handle: OpaquePointer?, _ reasons: UnsafeMutablePointer<UInt32>?,
                                  _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let client = try client(handle)
        guard let reasons else { throw CFailure(.invalidArgument, "reasons is NULL") }
        reasons.pointee = client.captureState.status.bits
    }
}

public typealias CaptureStateCallback = @convention(c) (OpaquePointer?, UInt32, UnsafeMutableRawPointer?) -> Void

@_cdecl("ork_capture_state_watch")
public func ork_capture_state_watch(_ handle: OpaquePointer?, _ callback: CaptureStateCallback?, _ userData: UnsafeMutableRawPointer?,
                                    _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let client = try client(handle)
        guard let callback else {
            client.replace(.captureState)
            return
        }
        let changes: AsyncStream<CaptureStatus>
        do throws(RecordingError) { changes = try client.captureState.changes() } catch { throw CFailure(error) }
        let user = UserData(pointer: userData)
        let generation = client.replace(.captureState)
        client.install(.captureState, generation, Task {
            var last: UInt32?
            for await status in changes {
                let bits = status.bits
                last = bits
                client.post(.captureState, generation) { callback($0, bits, user.pointer) }
            }
            // The daemon went away (not a cancellation): nothing captures through it now.
            if !Task.isCancelled, let last, last != 0 {
                client.post(.captureState, generation) { callback($0, 0, user.pointer) }
            }
        })
    }
}
