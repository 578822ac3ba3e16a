/// Where replayd looks for upload extensions' manifests, in this order (the first folder to
/// define an id wins: every `--extensions-dir`, then the system's, then the person's): one list for the daemon's catalog, `replayd --help`, `replay extensions
/// list --help` and docs (a test holds docs/extensions.md and docs/protocol.md to it).
public enum ExtensionFolders {
    /// The system's folders, each with what it is for (nil: nothing to say).
    public static let system: [(path: String, note: String?)] = [
        ("/usr/lib/openreplaykit/extensions", "the Debian package's"),
        ("/usr/share/openreplaykit/extensions", nil),
        ("/usr/local/share/openreplaykit/extensions", nil),
    ]
    /// The person's own folder, under `$XDG_DATA_HOME` (by default ~/.local/share).
    public static let personal = "openreplaykit/extensions"

    /// Every folder, in search order: `extra` (`replayd --extensions-dir`), the system's, then
    /// the person's for `environment` ($XDG_DATA_HOME, else $HOME/.local/share; `home` when
    /// neither is set).
    public static func paths(environment: [String: String], home: String, extra: [String] = []) -> [String] {
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? home) + "/.local/share"
        return extra + system.map(\.path) + [dataHome + "/" + personal]
    }

    /// The list as a sentence, for help texts: "every replayd --extensions-dir, then
    /// /usr/lib/openreplaykit/extensions (the Debian package's), …, and
    /// $XDG_DATA_HOME/openreplaykit/extensions (~/.local/share/openreplaykit/extensions by default)".
    public static var sentence: String { words(code: { $0 }) }

    /// The same sentence in Markdown, paths as code: what the docs say, word for word.
    public static var markdown: String { words(code: { "`\($0)`" }) }

    private static func words(code: (String) -> String) -> String {
        let system = system.map { code($0.path) + ($0.note.map { " (\($0))" } ?? "") }
        let personal = code("$XDG_DATA_HOME/\(personal)") + " (" + code("~/.local/share/\(personal)") + " by default)"
        return "every " + code("replayd --extensions-dir") + ", then " + system.joined(separator: ", ") + " and " + personal
    }
}
