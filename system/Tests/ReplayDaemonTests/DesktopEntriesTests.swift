import Foundation
@testable import ReplayDaemon
import Testing

/// How the desktop names an app: its installed `.desktop` entry, found by the executable the
/// kernel reports. Entries and programs are files of the test's own.
@Suite struct DesktopEntriesTests {
    /// A folder with `bin/tool` (an executable), `bin/alias` (a link to it), and the person's
    /// and the system's `applications` folders.
    final class Layout {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("desktop-entries-\(UUID().uuidString.prefix(8))")
        var bin: URL { root.appendingPathComponent("bin") }
        var person: URL { root.appendingPathComponent("home/applications") }
        var system: URL { root.appendingPathComponent("usr/applications") }
        var tool: String { bin.appendingPathComponent("tool").path }
        var entries: DesktopEntries { DesktopEntries(folders: [person, system], searchPath: [bin.path]) }

        init() throws {
            for folder in [bin, person, system] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
            FileManager.default.createFile(atPath: tool, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
            try FileManager.default.createSymbolicLink(atPath: bin.appendingPathComponent("alias").path, withDestinationPath: tool)
        }

        func write(_ name: String, in folder: URL, _ text: String) throws {
            let file = folder.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: file)
        }

        deinit { try? FileManager.default.removeItem(at: root) }
    }

    @Test func anAppIsNamedByTheEntryWhoseExecRunsItsExecutable() throws {
        let layout = try Layout()
        try layout.write("notes.desktop", in: layout.system, """
            [Desktop Entry]
            Type=Application
            Name=Secret Notes
            Name[de]=Geheime Notizen
            Icon=accessories-text-editor
            Exec=tool --new-window %U
            """)
        let app = try #require(layout.entries.app(executable: layout.tool))
        #expect(app == .init(name: "Secret Notes", icon: "accessories-text-editor", entry: layout.system.appendingPathComponent("notes.desktop").path))
        #expect(layout.entries.app(executable: "/usr/bin/true") == nil, "another program is not named")
    }

    /// TryExec, `env` with settings, a link to the program, a path with spaces in quotes: all
    /// name the program the kernel reports (the link resolved).
    @Test(arguments: ["TryExec=alias\nExec=something-else", "Exec=env LANG=C FOO=1 alias", "Exec=\"ALIAS\" --quoted \"a b\""])
    func theProgramIsFoundThroughTryExecEnvLinksAndQuotes(keys: String) throws {
        let layout = try Layout()
        let keys = keys.replacingOccurrences(of: "ALIAS", with: layout.bin.appendingPathComponent("alias").path)
        try layout.write("tool.desktop", in: layout.person, "[Desktop Entry]\nType=Application\nName=Tool\n\(keys)\n")
        #expect(layout.entries.app(executable: layout.tool)?.name == "Tool")
    }

    /// The person's entry hides the system's of the same id (a deleted one, `Hidden`, too);
    /// links, entries of another type and files with no entry name nothing.
    @Test func thePersonsEntryComesFirstAndOnlyApplicationsName() throws {
        let layout = try Layout()
        try layout.write("kde/tool.desktop", in: layout.system, "[Desktop Entry]\nType=Application\nName=System's\nExec=tool\n")
        try layout.write("kde/tool.desktop", in: layout.person, "[Desktop Entry]\nType=Application\nName=Mine\nExec=tool\n")
        #expect(layout.entries.app(executable: layout.tool)?.name == "Mine")
        try layout.write("kde/tool.desktop", in: layout.person, "[Desktop Entry]\nType=Application\nName=Mine\nExec=tool\nHidden=true\n")
        #expect(layout.entries.app(executable: layout.tool) == nil, "a hidden entry is a deleted one")
        try layout.write("kde/tool.desktop", in: layout.person, "[Desktop Entry]\nType=Link\nName=A link\nExec=tool\n")
        try layout.write("other.desktop", in: layout.person, "[Desktop Action new]\nName=New\nExec=tool\n")
        try layout.write("readme.txt", in: layout.person, "[Desktop Entry]\nType=Application\nName=Not an entry\nExec=tool\n")
        #expect(layout.entries.app(executable: layout.tool) == nil)
    }

    @Test func execIsSplitAsTheSpecificationQuotesIt() {
        #expect(DesktopEntry.arguments(of: #"app --flag "two words" "a \"quote\" and \\ back" %U"#)
            == ["app", "--flag", "two words", #"a "quote" and \ back"#, "%U"])
        #expect(DesktopEntry.arguments(of: "  spaced   out  ") == ["spaced", "out"])
        #expect(DesktopEntry(parsing: "[Desktop Entry]\nName=Tab\\tand\\sspace\\\\\n")?.name == "Tab\tand space\\")
        #expect(DesktopEntry(parsing: "Name=No group\n") == nil)
    }
}
