public import Foundation
public import ReplayIPC
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's protocol spoken by hand, as a hostile or broken client would: frames built
/// from requests (or from any bytes), and what comes back read as text.
public enum RawClient {
    /// `request` framed as a client sends it.
    public static func frame(_ request: ClientRequest) throws -> [UInt8] {
        let json = try JSONEncoder().encode(request)
        return FrameCodec.encodeHeader(jsonLength: json.count, bodyLength: 0) + [UInt8](json)
    }

    /// Sends raw bytes, closes the sending side and returns everything the daemon answers
    /// until it closes the connection; closes `fd`.
    public static func exchange(_ fd: Int32, bytes: [UInt8]) throws -> String {
        defer { close(fd) }
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        shutdown(fd, Int32(SHUT_WR))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += buffer[..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// A connection kept open after its `hello`, as an app's would be.
    public final class Connection {
        public let fd: Int32
        private var received: [UInt8] = []

        public init(socket: String, client: String = "raw-client") throws {
            fd = try UnixSocket.connect(path: socket)
            try send(.hello(protocolVersion: ClientProtocol.version, client: client))
            _ = answer(containing: ["welcome"])
        }

        deinit { close(fd) }

        public func send(_ request: ClientRequest) throws {
            let bytes = try RawClient.frame(request)
            _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        /// Everything read so far, once it holds one of `words`, the daemon closed, or `timeout` passed.
        public func answer(containing words: [String], timeout: Double = 20) -> String {
            let deadline = Date().addingTimeInterval(timeout)
            var text = String(decoding: received, as: UTF8.self)
            while !words.contains(where: text.contains), Date() < deadline {
                var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&entry, 1, 200) >= 0 else { break }
                guard entry.revents != 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                received += buffer[..<count]
                text = String(decoding: received, as: UTF8.self)
            }
            return text
        }
    }
}
