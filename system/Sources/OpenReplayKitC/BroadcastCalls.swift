#if canImport(Glibc)
import Glibc
#endif
public import COpenReplayKit
import OpenReplayKit

public typealias BroadcastCallback = @convention(c) (OpaquePointer?, UnsafePointer<ork_broadcast_status>?, UnsafeMutableRawPointer?) -> Void

extension BroadcastStatus {
    var cState: Int32 {
        switch state {
        case .starting: ORK_BROADCAST_STARTING
        case .live: ORK_BROADCAST_LIVE
        case .paused: ORK_BROADCAST_PAUSED
        case .finished: ORK_BROADCAST_FINISHED
        case .failed: ORK_BROADCAST_FAILED
        default: ORK_BROADCAST_OTHER
        }
    }

    /// Calls `body` with the header's status, its strings alive for the call.
    func withCStatus(_ body: (UnsafePointer<ork_broadcast_status>) -> Void) {
        var strings: [UnsafeMutablePointer<CChar>] = []
        defer { strings.forEach { free($0) } }
        let keep = { (text: String) -> UnsafePointer<CChar> in
            let copy = strdup(text)!
            strings.append(copy)
            return UnsafePointer(copy)
        }
        let info: [UnsafePointer<CChar>?] = serviceInfo.sorted { $0.key < $1.key }.flatMap { [keep($0.key), keep($0.value)] } + [nil]
        info.withUnsafeBufferPointer { pairs in
            var status = ork_broadcast_status(
                id: keep(id), extension_id: keep(extensionID), scope: scope == .app ? ORK_BROADCAST_SCOPE_APP : ORK_BROADCAST_SCOPE_SCREEN,
                state: cState, frames_sent: Int64(framesSent), frames_dropped: Int64(framesDropped),
                url: broadcastURL.map(keep), error: lastError.map(keep),
                service_info_count: serviceInfo.count, service_info: pairs.baseAddress)
            body(&status)
        }
    }
}

@_cdecl("ork_broadcast_picker_show")
public func ork_broadcast_picker_show(_ handle: OpaquePointer?, _ preferred: UnsafePointer<CChar>?, _ scope: Int32, _ microphone: Int32,
                                      _ setup: UnsafePointer<UnsafePointer<CChar>?>?,
                                      _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let controller = try client(handle).broadcast
        let broadcastScope: BroadcastScope
        switch scope {
        case ORK_BROADCAST_SCOPE_SCREEN: broadcastScope = .screen
        case ORK_BROADCAST_SCOPE_APP: broadcastScope = .app
        default: throw CFailure(.invalidArgument, "scope \(scope) is neither ORK_BROADCAST_SCOPE_SCREEN nor ORK_BROADCAST_SCOPE_APP")
        }
        var settings: [String: String] = [:]
        if let setup {
            var index = 0
            while let key = setup[index] {
                guard let value = setup[index + 1] else {
                    throw CFailure(.invalidArgument, "setup key '\(String(cString: key))' has no value (setup is key, value, ..., NULL)")
                }
                settings[String(cString: key)] = String(cString: value)
                index += 2
            }
        }
        let extensionID = preferred.map { String(cString: $0) }
        let mic = microphone != 0
        let setup = settings
        try runBlocking { () async throws(RecordingError) in
            try await controller.showPicker(preferredExtension: extensionID, microphone: mic, scope: broadcastScope, setup: setup)
        }
    }
}

@_cdecl("ork_broadcast_watch")
public func ork_broadcast_watch(_ handle: OpaquePointer?, _ callback: BroadcastCallback?, _ userData: UnsafeMutableRawPointer?,
                                _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        let client = try client(handle)
        let generation = client.replace(.broadcast)
        guard let callback else { return }
        let updates = client.broadcast.updates()
        let user = UserData(pointer: userData)
        client.install(.broadcast, generation, Task {
            for await status in updates {
                client.post(.broadcast, generation) { handle in status.withCStatus { callback(handle, $0, user.pointer) } }
            }
        })
    }
}

private func control(_ handle: OpaquePointer?, _ error: UnsafeMutablePointer<OpaquePointer?>?,
                     _ body: @escaping @Sendable (BroadcastController) async throws(RecordingError) -> Void) -> Int32 {
    call(error) { () throws(CFailure) in
        let controller = try client(handle).broadcast
        try runBlocking { () async throws(RecordingError) in try await body(controller) }
    }
}

@_cdecl("ork_broadcast_pause")
public func ork_broadcast_pause(_ handle: OpaquePointer?, _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    control(handle, error) { controller async throws(RecordingError) in try await controller.pause() }
}

@_cdecl("ork_broadcast_resume")
public func ork_broadcast_resume(_ handle: OpaquePointer?, _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    control(handle, error) { controller async throws(RecordingError) in try await controller.resume() }
}

@_cdecl("ork_broadcast_finish")
public func ork_broadcast_finish(_ handle: OpaquePointer?, _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    control(handle, error) { controller async throws(RecordingError) in try await controller.finish() }
}
