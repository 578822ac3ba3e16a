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

    /// Every shipped manifest is usable, says what it is, and its numbers and choices have
    /// defaults their own checks take.
    @Test func theShippedManifestsDescribeThemselvesAndTheirDefaultsPass() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/Extensions")
        for path in ["File/file.json", "RTMP/rtmp.json", "SRT/srt.json", "HLS/hls.json", "WebRTC/webrtc.json", "VideoRoom/videoroom.json", "Gst/gst.json"] {
            let manifest = try JSONDecoder().decode(ExtensionManifest.self, from: Data(contentsOf: sources.appendingPathComponent(path)))
            #expect(manifest.definitionProblem == nil, "\(path)")
            #expect(manifest.description?.isEmpty == false && manifest.icon?.isEmpty == false, "\(path)")
        }
    }

    /// replayd fills what the person left empty with its default, then checks numbers against
    /// their range and choices against their list.
    @Test func numbersAndChoicesGetTheirDefaultsAndAreChecked() {
        let manifest = ExtensionManifest(id: "s", displayName: "S", executable: "s", setupFields: [
            .init(key: "mode", label: "Mode", kind: .choice, defaultValue: "video", choices: ["video", "screencast"]),
            .init(key: "fps", label: "FPS", kind: .number, required: true, defaultValue: "30", minimum: 1, maximum: 30),
        ])
        let filled = manifest.applyingDefaults(to: ["fps": ""])
        #expect(filled == ["mode": "video", "fps": "30"])
        #expect(manifest.problem(with: filled) == nil)
        #expect(manifest.problem(with: ["fps": "31"]) == "fps must be at most 30 (given 31)")
        #expect(manifest.problem(with: ["fps": "0.5"]) == "fps must be at least 1 (given 0.5)")
        #expect(manifest.problem(with: ["fps": "nan"]) == "fps must be a number, not 'nan'")
        #expect(manifest.problem(with: ["fps": "30", "mode": "huge"]) == "mode must be one of 'video', 'screencast' (given 'huge')")
        // A manifest whose own fields make no sense is not listed.
        let broken = [
            ExtensionManifest.SetupField(key: "c", label: "C", kind: .choice),
            .init(key: "n", label: "N", kind: .number, minimum: 10, maximum: 1),
            .init(key: "d", label: "D", kind: .number, defaultValue: "99", maximum: 10),
        ]
        #expect(broken.map { $0.definitionProblem != nil } == [true, true, true])
    }

    @Test func aManifestWithAnUnusableFieldIsNotListed() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let executable = folder.appendingPathComponent("x")
        try Data("#!/bin/sh\n".utf8).write(to: executable)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: executable.path)
        let good = ExtensionManifest(id: "good", displayName: "Good", executable: "x",
                                     setupFields: [.init(key: "n", label: "N", kind: .number, defaultValue: "5", minimum: 1, maximum: 9)])
        let bad = ExtensionManifest(id: "bad", displayName: "Bad", executable: "x", setupFields: [.init(key: "c", label: "C", kind: .choice)])
        for manifest in [good, bad] { try JSONEncoder().encode(manifest).write(to: folder.appendingPathComponent("\(manifest.id).json")) }
        #expect(ExtensionCatalog(directories: [folder], logger: Logger(label: "test")).list().map(\.manifest.id) == ["good"])
    }
}
