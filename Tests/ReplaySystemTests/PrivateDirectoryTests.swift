import Foundation
import ReplaySystem
import Testing

/// The folders replayd keeps its socket, store and token in are made private; a folder
/// every user shares is refused, never made private (a socket named in /tmp once made /tmp
/// mode 0700 for the whole machine).
@Suite struct PrivateDirectoryTests {
    func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ork-private-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        return url
    }

    func mode(_ url: URL) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int)
    }

    @Test func aNewFolderAndAnOwnOpenOneAreMadePrivate() throws {
        let base = try scratch()
        defer { try? FileManager.default.removeItem(at: base) }
        let fresh = base.appendingPathComponent("a/b")
        try ReplayPaths.makePrivateDirectory(fresh)
        #expect(try mode(fresh) == 0o700)
        let open = base.appendingPathComponent("open")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        try ReplayPaths.makePrivateDirectory(open)
        #expect(try mode(open) == 0o700)
    }

    @Test func aSharedStickyFolderIsRefusedAndLeftAsItIs() throws {
        let shared = try scratch()
        defer { try? FileManager.default.removeItem(at: shared) }
        #expect(chmod(shared.path, 0o1777) == 0)
        #expect(throws: SystemError.self) { try ReplayPaths.makePrivateDirectory(shared) }
        #expect(try mode(shared) == 0o1777)
        // A folder of its own inside it is fine.
        try ReplayPaths.makePrivateDirectory(shared.appendingPathComponent("mine"))
        #expect(try mode(shared.appendingPathComponent("mine")) == 0o700)
    }
}
