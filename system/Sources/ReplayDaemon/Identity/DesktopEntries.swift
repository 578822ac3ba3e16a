import FoundationEssentials
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// How the desktop names an app: the `.desktop` entry installed for the executable the kernel
/// reports for its process (`TryExec`, else `Exec`'s program, both resolved through `PATH` and
/// symbolic links), with its `Name` and `Icon`. A prompt shows the app as the person knows it.
/// It is a name, not a proof: any program can install an entry naming itself, so the path the
/// kernel reports is shown beside it, always.
struct DesktopEntries: Sendable {
    /// The app as its entry names it.
    struct App: Sendable, Equatable {
        let name: String
        /// An icon name from the theme, or an absolute path; nil when the entry has none.
        let icon: String?
        /// The entry's file.
        let entry: String
    }

    /// The `applications` folders, most important first (the person's own before the system's).
    let folders: [URL]
    /// Where a program named without a path is looked for.
    let searchPath: [String]

    /// Entries are read anew each time: a prompt is rare, and an app installed a moment ago is named.
    static let maxEntries = 4000
    static let maxEntrySize = 64 << 10

    init(folders: [URL], searchPath: [String]) {
        self.folders = folders
        self.searchPath = searchPath
    }

    /// The folders the XDG base directory specification names for this environment:
    /// `$XDG_DATA_HOME` (else `~/.local/share`), then each of `$XDG_DATA_DIRS` (else
    /// `/usr/local/share:/usr/share`), each with `applications` appended.
    init(environment: [String: String]) {
        let home = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? environment["HOME"].map { $0 + "/.local/share" }
        let system = (environment["XDG_DATA_DIRS"] ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        let data = [home].compactMap { $0 } + (system.isEmpty ? ["/usr/local/share", "/usr/share"] : system)
        let path = (environment["PATH"] ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        self.init(folders: data.map { URL(fileURLWithPath: $0).appendingPathComponent("applications") },
                  searchPath: path.isEmpty ? ["/usr/local/bin", "/usr/bin", "/bin"] : path)
    }

    /// The entry that runs `executable` (a path from `/proc/PID/exe`), if one is installed.
    func app(executable: String) -> App? {
        let target = Self.canonical(executable)
        var seen = Set<String>()
        var read = 0
        for folder in folders {
            for path in Self.desktopFiles(under: folder.path, limit: Self.maxEntries) where read < Self.maxEntries {
                let file = URL(fileURLWithPath: path)
                // The desktop file id: the path under `applications`, '/' as '-'. The first folder's wins.
                let id = String(file.path.dropFirst(folder.path.count + 1)).replacing("/", with: "-")
                guard seen.insert(id).inserted else { continue }
                read += 1
                guard let text = Self.contents(of: file), let entry = DesktopEntry(parsing: text), !entry.hidden,
                      entry.type == "Application", let name = entry.name,
                      let program = entry.tryExec ?? entry.execProgram,
                      let resolved = resolve(program), Self.canonical(resolved) == target else { continue }
                return App(name: name, icon: entry.icon, entry: file.path)
            }
        }
        return nil
    }

    /// `program` as a path: as it is when absolute, else the first in the search path that is executable.
    private func resolve(_ program: String) -> String? {
        if program.hasPrefix("/") { return program }
        guard !program.contains("/") else { return nil }
        return searchPath.map { "\($0)/\(program)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The path with every symbolic link resolved (`/usr/bin/app` → `/opt/app/bin/app`), as the kernel reports it.
    private static func canonical(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private static func contents(of file: URL) -> String? {
        guard let handle = try? FileDescriptor.open(file.path, flags: O_RDONLY),
              let data = try? handle.read(upTo: maxEntrySize + 1), data.count <= maxEntrySize else { return nil }
        return String(validating: data, as: UTF8.self)
    }

    /// The `.desktop` files under `folder` and its subfolders (symbolic links not followed), at most `limit`.
    private static func desktopFiles(under folder: String, limit: Int) -> [String] {
        var found: [String] = []
        var pending = [folder]
        while let directory = pending.popLast(), found.count < limit {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
                let path = directory + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                if info.st_mode & S_IFMT == S_IFDIR {
                    pending.append(path)
                } else if name.hasSuffix(".desktop") {
                    found.append(path)
                }
            }
        }
        return found
    }
}

/// The keys of a `.desktop` file's `[Desktop Entry]` group that name an app, as the Desktop
/// Entry Specification writes them.
struct DesktopEntry: Equatable {
    var type: String?
    var name: String?
    var icon: String?
    var exec: String?
    var tryExec: String?
    var hidden = false

    init?(parsing text: String) {
        var inEntry = false
        var found = false
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                inEntry = line == "[Desktop Entry]"
                found = found || inEntry
                continue
            }
            guard inEntry, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingSpaces()
            let value = Self.unescaped(line[line.index(after: equals)...].trimmingSpaces())
            switch key {
            case "Type": type = value
            case "Name": name = value
            case "Icon": icon = value.isEmpty ? nil : value
            case "Exec": exec = value
            case "TryExec": tryExec = value.isEmpty ? nil : value
            case "Hidden": hidden = value == "true"
            default: break
            }
        }
        guard found else { return nil }
    }

    /// The program `Exec` runs: its first argument, past an `env` and its `NAME=value` settings.
    var execProgram: String? {
        guard let exec else { return nil }
        var arguments = Self.arguments(of: exec)[...]
        if arguments.first == "env" || arguments.first == "/usr/bin/env" {
            arguments = arguments.dropFirst().drop { $0.contains("=") && !$0.hasPrefix("/") }
        }
        return arguments.first
    }

    /// `Exec`'s arguments: separated by spaces, a quoted one between double quotes, in which a
    /// backslash keeps the next character (`"`, `` ` ``, `$` or `\`).
    static func arguments(of exec: String) -> [String] {
        var arguments: [String] = []
        var current = ""
        var quoted = false, escaped = false, started = false
        for character in exec {
            if escaped {
                current.append(character)
                escaped = false
            } else if quoted && character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
                started = true
            } else if character == " " && !quoted {
                if started { arguments.append(current) }
                current = ""
                started = false
            } else {
                current.append(character)
                started = true
            }
        }
        if started { arguments.append(current) }
        return arguments
    }

    /// A value's escapes: `\s`, `\n`, `\t`, `\r` and `\\`.
    private static func unescaped(_ value: String) -> String {
        guard value.contains("\\") else { return value }
        var result = ""
        var escaped = false
        for character in value {
            if escaped {
                switch character {
                case "s": result.append(" ")
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "r": result.append("\r")
                default: result.append(character)
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        return result
    }
}
