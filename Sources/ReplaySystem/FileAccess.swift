import FoundationEssentials

/// What a confined child may open by path (`ChildProcess(confinedPath:files:)`, Landlock):
/// read and execute beneath `readable`, anything beneath `writable`, nothing else. What it was
/// handed already open stays its own either way.
public struct FileAccess: Sendable, Equatable {
    public var readable: [String]
    public var writable: [String]

    public init(readable: [String], writable: [String]) {
        self.readable = readable
        self.writable = writable
    }

    /// Reading everything but what lies beneath `hidden`, writing only beneath `writable`.
    ///
    /// Landlock only allows, so "everything but" is spelled out from the file system as it
    /// is now: beside each folder on the way down to a hidden one, every other entry is
    /// readable; the folders on the way are not themselves listed, and what appears in them
    /// later cannot be read. An entry that is a symbolic link into (or above) a hidden folder
    /// is left out, as the rule would follow it.
    public static func everything(except hidden: [String], writable: [String]) -> FileAccess {
        let hidden = hidden.map(Self.resolved)
        var readable: [String] = []
        func isAncestor(_ folder: String, of path: String) -> Bool {
            folder == "/" ? path != "/" : path.hasPrefix(folder + "/")
        }
        func walk(_ folder: String) {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            for name in entries.sorted() {
                let path = folder == "/" ? "/" + name : folder + "/" + name
                // The folders walked are real, so only a link's entry names another place.
                let isLink = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != nil
                let real = isLink ? Self.resolved(path) : path
                if hidden.contains(where: { real == $0 || isAncestor($0, of: real) }) { continue }  // hidden, or inside
                if hidden.contains(where: { isAncestor(real, of: $0) }) {
                    if real == path { walk(path) }  // on the way down: its other entries
                    continue  // a link above a hidden folder: its real path is walked, or left out
                }
                readable.append(path)
            }
        }
        walk("/")
        return FileAccess(readable: readable, writable: writable)
    }

    /// `path` with every symbolic link resolved (as far as it exists).
    private static func resolved(_ path: String) -> String {
        URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }
}
