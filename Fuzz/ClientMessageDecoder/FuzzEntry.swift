// libFuzzer entry for the client protocol's decoders: built by scripts/fuzz-decoder client
// together with the ReplayIPC files that define the frames and the messages.
//
// Each input is one frame as it arrives from the socket (little-endian header, JSON, body).
// It goes through the daemon's path (FrameCodec.decodeHeader with the request limits, the JSON
// decoder, the handshake gate) and through a client's (the event limits, and the handshake's).
// Decoding must never trap; a header it accepts must be within the limits; whatever decodes
// must survive an encode/frame/decode round trip unchanged.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzClientMessageDecoder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: size > 0 ? data : nil, count: size))
    // replayd: a request, then what its handshake gate makes of it first and later.
    check(ClientRequest.self, bytes, limits: .requests) { request in
        var gate = ClientProtocol.Gate()
        let first = gate.admit(request, daemonPID: 1)
        var isHelloOfThisVersion = false
        if case .hello(let version, _, _, _) = request { isHelloOfThisVersion = version == ClientProtocol.version }
        switch first {
        case .answer: guard isHelloOfThisVersion, gate.isOpen else { fatalError("gate welcomed \(request)") }
        case .refuse: guard !isHelloOfThisVersion, !gate.isOpen else { fatalError("gate refused \(request)") }
        case .handle: fatalError("gate let \(request) through before any hello")
        case .reject: fatalError("gate answered \(request) before any hello and kept the connection")
        }
        if gate.isOpen, case .handle = gate.admit(request, daemonPID: 1) { fatalError("a second hello was let through") }
    }
    // A client: the answer to its hello, then any event.
    check(DaemonEvent.self, bytes, limits: .handshake)
    check(DaemonEvent.self, bytes, limits: .events)
    return 0
}

private func check<M: Codable & Equatable>(_: M.Type, _ bytes: [UInt8], limits: FrameCodec.Limits, then: (M) -> Void = { _ in }) {
    guard bytes.count >= FrameCodec.headerSize,
          let lengths = try? FrameCodec.decodeHeader(bytes[0..<FrameCodec.headerSize], limits: limits) else { return }
    guard (1...limits.maxJSON).contains(lengths.json), (0...limits.maxBody).contains(lengths.body) else {
        fatalError("decodeHeader accepted \(lengths) over \(limits)")
    }
    // A frame not yet whole: the reader waits for the rest.
    guard bytes.count >= FrameCodec.headerSize + lengths.json + lengths.body else { return }
    let json = Data(bytes[FrameCodec.headerSize..<FrameCodec.headerSize + lengths.json])
    let message: M
    do {
        switch try ClientProtocol.decode(M.self, from: json) {
        case .message(let decoded): message = decoded
        case .unknown(let name):
            // A later version's message: the gate answers it, and never lets it through.
            var gate = ClientProtocol.Gate()
            if case .handle = gate.admitUnknown(name: name) { fatalError("gate let unknown \(name) through") }
            return
        }
    } catch {
        _ = error.description
        return
    }
    then(message)
    let encoded: Data
    do {
        encoded = try JSONEncoder().encode(message)
    } catch {
        fatalError("\(message) decoded but does not encode: \(error)")
    }
    let header = FrameCodec.encodeHeader(jsonLength: encoded.count, bodyLength: 0)
    guard let again = try? FrameCodec.decodeHeader(header, limits: .events), again.json == encoded.count, again.body == 0 else {
        fatalError("the header of \(encoded.count) bytes does not decode")
    }
    let decoded: M
    do {
        decoded = try JSONDecoder().decode(M.self, from: encoded)
    } catch {
        fatalError("encode(\(message)) does not decode: \(error)")
    }
    guard decoded == message else { fatalError("round trip changed \(message) into \(decoded)") }
}
