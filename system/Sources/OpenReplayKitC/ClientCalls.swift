import OpenReplayKit
import Synchronization

let clients = HandleTable<Client>(tag: 0x4f52_4b43 << 32)

/// The client behind `handle`, or `ORK_ERROR_INVALID_HANDLE`.
func client(_ handle: OpaquePointer?) throws(CFailure) -> Client {
    guard let client = clients.lookup(UnsafeRawPointer(handle)) else {
        throw CFailure(.invalidHandle, handle == nil ? "the client is NULL" : "not a live client (freed, or never made by ork_client_new)")
    }
    return client
}

@_cdecl("ork_client_new")
public func ork_client_new(_ socket: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                           _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    call(error) { () throws(CFailure) in
        guard let out else { throw CFailure(.invalidArgument, "the client's out-parameter is NULL") }
        let client = Client(socket: socket.map { String(cString: $0) })
        let handle = clients.insert(client)
        client.handle.withLock { $0 = UInt(bitPattern: handle) }
        out.pointee = OpaquePointer(handle)
    }
}

@_cdecl("ork_client_free")
public func ork_client_free(_ handle: OpaquePointer?) {
    clients.remove(UnsafeRawPointer(handle))?.close()
}
