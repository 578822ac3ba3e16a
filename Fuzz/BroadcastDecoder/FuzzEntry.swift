// libFuzzer entry for BroadcastCodec.decode: built by scripts/fuzz-decoder broadcast together
// with Sources/ReplayIPC/Broadcast/BroadcastMessage.swift and BroadcastCodec.swift.
// Decoding must never trap; whatever decodes must survive an encode/decode round trip.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBroadcastDecoder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let body = UnsafeBufferPointer(start: size > 0 ? data : nil, count: size)
    let surfaces = BroadcastCodec.Surfaces(count: 4, size: 1 << 20)
    guard let message = try? BroadcastCodec.decode(body, surfaces: surfaces) else { return 0 }
    let framed = BroadcastCodec.encode(message)
    guard framed.count >= 4 else { fatalError("encode(\(message)) returned \(framed.count) bytes, less than its prefix") }
    let prefix = framed[0..<4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    guard prefix == UInt32(framed.count - 4) else {
        fatalError("encode(\(message)): prefix says \(prefix) bytes, body has \(framed.count - 4)")
    }
    let again: BroadcastMessage
    do {
        again = try BroadcastCodec.decode(framed[4...], surfaces: surfaces)
    } catch {
        fatalError("encode(\(message)) does not decode: \(error)")
    }
    guard again == message else { fatalError("round trip changed \(message) into \(again)") }
    return 0
}
