import Foundation
import ReplayIPC
import Testing

/// Where replayd looks for extensions is said in one place in code, and the docs say the same.
@Suite struct ExtensionFoldersTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The document's text with its line breaks undone, as a reader sees it.
    static func text(_ document: String) throws -> String {
        let raw = try String(contentsOf: repository.appendingPathComponent(document), encoding: .utf8)
        return raw.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    @Test(arguments: ["docs/extensions.md", "docs/protocol.md"])
    func theDocsListTheFoldersTheCodeSearches(document: String) throws {
        #expect(try Self.text(document).contains(ExtensionFolders.markdown), "\(document) must say: \(ExtensionFolders.markdown)")
    }

    @Test func theFoldersAreSearchedInTheOrderTheSentenceGives() {
        let paths = ExtensionFolders.paths(environment: ["HOME": "/home/ada"], home: "/nowhere", extra: ["/opt/mine"])
        #expect(paths == ["/opt/mine", "/usr/lib/openreplaykit/extensions", "/usr/share/openreplaykit/extensions",
                          "/usr/local/share/openreplaykit/extensions", "/home/ada/.local/share/openreplaykit/extensions"])
        #expect(ExtensionFolders.paths(environment: ["XDG_DATA_HOME": "/data"], home: "/nowhere").last == "/data/openreplaykit/extensions")
        var position = ExtensionFolders.sentence.startIndex
        for path in ["replayd --extensions-dir"] + ExtensionFolders.system.map(\.path) + ["$XDG_DATA_HOME/openreplaykit/extensions"] {
            let found = ExtensionFolders.sentence.range(of: path, range: position..<ExtensionFolders.sentence.endIndex)
            #expect(found != nil, "\(path) in order in: \(ExtensionFolders.sentence)")
            if let found { position = found.upperBound }
        }
    }
}
