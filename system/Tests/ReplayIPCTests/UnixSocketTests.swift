import Foundation
import ReplayIPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct UnixSocketTests {
    /// A server's socket file appears at bind, before it listens: a client that trusted the file
    /// alone was refused (the virtual desktop's session bus did this now and then under load).
    @Test func onlyAListeningSocketAcceptsConnectionsNotOneThatIsMerelyBound() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("unix-socket-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("socket").path
        #expect(!UnixSocket.acceptsConnections(path: path), "no file yet")

        let bound = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(bound >= 0)
        defer { close(bound) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(bound, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(status == 0)
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(!UnixSocket.acceptsConnections(path: path), "bound but not listening")

        try #require(listen(bound, 4) == 0)
        #expect(UnixSocket.acceptsConnections(path: path))
    }
}
