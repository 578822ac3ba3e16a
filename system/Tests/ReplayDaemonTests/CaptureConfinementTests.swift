import Foundation
@testable import ReplayDaemon
import ReplaySystem
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A capture process opens no file of the store: its movie is handed to it. Tried by a shell
/// started with the very confinement `ReplayCaptureLauncher` gives `replay-capture`.
@Suite struct CaptureConfinementTests {
    let root: URL
    let store: URL

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("confinement-\(UUID().uuidString.prefix(8))")
        store = root.appendingPathComponent("store")
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        try Data("someone's movie".utf8).write(to: store.appendingPathComponent("rec-1.mp4"))
        try Data("beside the store".utf8).write(to: root.appendingPathComponent("beside.txt"))
    }

    /// Runs `script` in /bin/sh confined as the capture process is, with the store hidden;
    /// returns its exit status and what it printed.
    func runConfined(_ script: String) throws -> (status: Int32, output: String) {
        let launcher = ReplayCaptureLauncher(executable: "/bin/sh", hidden: [store.path])
        let output = try Pipe.make()
        let child: ChildProcess
        do {
            defer { close(output.write) }
            child = try ChildProcess(confinedPath: "/bin/sh", arguments: ["-c", script], environment: ["PATH": "/usr/bin:/bin"],
                                     landlockScopes: false, files: launcher.files, stderr: .descriptor(output.write),
                                     inheriting: [(output.write, 1)])
        }
        defer { close(output.read) }
        let status = child.wait()
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while case let count = read(output.read, &chunk, chunk.count), count > 0 { bytes += chunk[..<count] }
        return (status, String(decoding: bytes, as: UTF8.self))
    }

    @Test(.enabled(if: ChildProcess.landlockABI >= 1, "Landlock is not enabled in this kernel"))
    func aConfinedCaptureProcessCanNeitherReadNorWriteTheStore() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let movie = store.appendingPathComponent("rec-1.mp4").path
        // What a capture process needs still opens: its libraries, the system's files, its devices.
        let allowed = try runConfined("cat /etc/hostname >/dev/null && cat \(root.path)/beside.txt && echo ok >/dev/null")
        #expect(allowed.status == 0, "\(allowed.output)")
        #expect(allowed.output.contains("beside the store"))
        // The store: no movie read, no folder listed, nothing written, removed or renamed.
        for attack in ["cat \(movie)", "ls \(store.path)", "echo forged > \(store.path)/rec-2.mp4", "rm \(movie)",
                       "mv \(movie) \(root.path)/taken.mp4", "echo forged > \(root.path)/beside.txt"] {
            let result = try runConfined(attack)
            #expect(result.status != 0, "\(attack) succeeded: \(result.output)")
            #expect(result.output.contains("Permission denied"), "\(attack): \(result.output)")
        }
        #expect(try String(contentsOfFile: movie, encoding: .utf8) == "someone's movie")
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent("rec-2.mp4").path))
    }

    /// "Everything but the store" is every entry beside each folder on the way down to it.
    @Test func everythingButAFolderIsItsSiblingsOnTheWayDown() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let access = FileAccess.everything(except: [store.path], writable: ["/dev"])
        #expect(access.writable == ["/dev"])
        #expect(access.readable.contains("/usr") && access.readable.contains("/etc"))
        #expect(access.readable.contains(root.appendingPathComponent("beside.txt").path))
        let realStore = store.resolvingSymlinksInPath().path
        #expect(!access.readable.contains { $0 == realStore || $0.hasPrefix(realStore + "/") || realStore.hasPrefix($0 + "/") || $0 == "/" },
                "\(access.readable.filter { realStore.hasPrefix($0) })")
    }
}
