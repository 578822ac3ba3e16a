import Foundation
import ReplaySystem
import Testing
#if canImport(Glibc)
import Glibc
#endif

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

    /// Something not a folder of this user's at the runtime folder's name (here a file; another
    /// user's folder alike) is passed over for a name nobody else can take first.
    @Test func aTakenRuntimeFolderNameIsPassedForOneOnlyThisUserCanMake() throws {
        let runtime = try scratch()
        defer { try? FileManager.default.removeItem(at: runtime) }
        let environment = ["XDG_RUNTIME_DIR": runtime.path, "XDG_STATE_HOME": runtime.appendingPathComponent("state").path]
        #expect(ReplayPaths.runtimeDirectory(environment: environment).path == runtime.appendingPathComponent("openreplaykit").path)
        #expect(FileManager.default.createFile(atPath: runtime.appendingPathComponent("openreplaykit").path, contents: Data()))
        #expect(ReplayPaths.squat(of: runtime.appendingPathComponent("openreplaykit"))?.description.contains("rm '") == true)

        // Nobody else can make names in the runtime folder: a second name there.
        #expect(chmod(runtime.path, 0o700) == 0)
        #expect(ReplayPaths.runtimeDirectory(environment: environment).path == runtime.appendingPathComponent("openreplaykit-\(geteuid())").path)
        // Everybody can: the state folder, in the user's home.
        #expect(chmod(runtime.path, 0o1777) == 0)
        #expect(ReplayPaths.runtimeDirectory(environment: environment).path == runtime.appendingPathComponent("state/openreplaykit/runtime").path)
        #expect(ReplayPaths.defaultSocket(environment: environment).path == runtime.appendingPathComponent("state/openreplaykit/runtime/replayd.sock").path)
    }
}
