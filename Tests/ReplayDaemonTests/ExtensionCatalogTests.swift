import Foundation
import Logging
import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayIPC
import Testing

/// A manifest may run only an executable in its own folder: the attacks a hostile manifest
/// (or a person tricked into installing one) would try are each refused.
@Suite struct ExtensionCatalogTests {
    /// Only an extension that serves peers on the host's own network keeps it: of the shipped
    /// ones, WebRTC; a manifest that does not say gets a network namespace of its own.
    @Test func onlyTheWebRTCManifestKeepsTheHostsNetwork() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/Extensions")
        let shipped = try ["File/file.json", "RTMP/rtmp.json", "SRT/srt.json", "HLS/hls.json", "WebRTC/webrtc.json"].map { path in
            try JSONDecoder().decode(ExtensionManifest.self, from: Data(contentsOf: sources.appendingPathComponent(path)))
        }
        #expect(shipped.filter(\.hostNetwork).map(\.id) == ["webrtc"])
        let encoded = try JSONEncoder().encode(shipped[4])
        #expect(try JSONDecoder().decode(ExtensionManifest.self, from: encoded).hostNetwork)
    }

    @Test func onlyExecutablesInsideTheManifestsFolderAreRun() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = root.appendingPathComponent("extensions")
        let outside = root.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        for file in [folder.appendingPathComponent("good"), outside.appendingPathComponent("evil")] {
            try Data("#!/bin/sh\n".utf8).write(to: file)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: file.path)
        }
        // A link inside the folder that leads out of it, and a folder link that does.
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("link"), withDestinationURL: outside.appendingPathComponent("evil"))
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("sub"), withDestinationURL: outside)
        let attempts = [
            "good": "good",
            "dotdot": "../elsewhere/evil",
            "absolute": outside.appendingPathComponent("evil").path,
            "system": "/bin/sh",
            "symlink": "link",
            "folderlink": "sub/evil",
            "sneaky": "./sub/../../elsewhere/evil",
        ]
        for (id, executable) in attempts {
            let manifest = ExtensionManifest(id: id, displayName: id, executable: executable)
            try JSONEncoder().encode(manifest).write(to: folder.appendingPathComponent("\(id).json"))
        }
        let listed = ExtensionCatalog(directories: [folder], logger: Logger(label: "test")).list()
        #expect(listed.map(\.manifest.id) == ["good"])
        #expect(listed.first?.manifest.executable == folder.appendingPathComponent("good").resolvingSymlinksInPath().path)
    }
}
