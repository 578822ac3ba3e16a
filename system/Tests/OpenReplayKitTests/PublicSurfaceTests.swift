import Foundation
import Testing

/// The app SDK's public surface is its own types: the wire protocol (ReplayIPC) stays behind
/// an internal import, so the compiler refuses any public declaration that names one of its
/// types, and the example app imports the SDK alone.
@Suite struct PublicSurfaceTests {
    /// The repository: the SDK is in its Sources/, the examples in system/.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func imports(in folder: String) throws -> [(file: String, line: String)] {
        let directory = root.appendingPathComponent(folder)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }
        #expect(!files.isEmpty, "no Swift files in \(folder)")
        return try files.flatMap { file in
            try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { $0.contains("import ") && !$0.hasPrefix("//") }
                .map { (file, $0) }
        }
    }

    @Test func theSDKImportsItsWireInternally() throws {
        for (file, line) in try Self.imports(in: "Sources/OpenReplayKit") where line.contains("ReplayIPC") || line.contains("ReplaySystem") {
            let access = line.replacingOccurrences(of: "@_spi(OpenReplayKitInternal) ", with: "")
            #expect(access.hasPrefix("import "), "\(file): \(line): the wire and the system layer stay internal to the SDK")
        }
        for (file, line) in try Self.imports(in: "Sources/OpenReplayKit") {
            #expect(!line.contains("@_exported"), "\(file): \(line)")
        }
    }

    @Test func theExampleAppImportsOnlyTheSDK() throws {
        for (file, line) in try Self.imports(in: "system/Examples/SecretNotes") {
            #expect(!line.contains("ReplayIPC") && !line.contains("ReplaySystem"), "\(file): \(line): an app imports the SDK, not its wire")
        }
    }
}
