#if canImport(Glibc)
import Glibc
#endif
public import FoundationEssentials

/// Opens a loopback page in the person's browser without putting its address on a command
/// line: every user can read command lines (`ps`, /proc/PID/cmdline), and the address holds
/// the page's one-time link. The browser gets the path of a redirect file instead, mode 0600
/// in the person's private runtime folder, that sends it on to the page.
public enum PageOpener {
    /// Redirect files older than this are removed when the next page opens: by then the
    /// browser has followed them, and their links are spent or expired.
    public static let keep: TimeInterval = 600

    /// Runs `$BROWSER` (else xdg-open) on the redirect file; returns the browser's process,
    /// which a long-lived caller reaps (`onExit`).
    @discardableResult
    public static func open(_ url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(PageOpenerFailure) -> ChildProcess {
        let browser = environment["BROWSER"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/bin/xdg-open"
        let file = try redirectFile(to: url, environment: environment)
        do {
            return try ChildProcess(path: browser, arguments: [file.path], environment: environment)
        } catch {
            try? FileManager.default.removeItem(at: file)
            throw PageOpenerFailure(description: "cannot run \(browser): \(error)")
        }
    }

    /// Writes the page that redirects to `url`, readable by this user alone, and returns its path.
    public static func redirectFile(to url: String, environment: [String: String]) throws(PageOpenerFailure) -> URL {
        let runtime = ReplayPaths.runtimeDirectory(environment: environment)
        let directory = runtime.appendingPathComponent("pages")
        do {
            try ReplayPaths.makePrivateDirectory(runtime)
            try ReplayPaths.makePrivateDirectory(directory)
        } catch {
            throw PageOpenerFailure(description: "cannot make \(directory.path): \(error)")
        }
        removeStale(in: directory)
        let file = directory.appendingPathComponent("page-\(UUID().uuidString).html")
        let escaped = url.replacing( "&", with: "&amp;").replacing( "\"", with: "&quot;")
            .replacing( "<", with: "&lt;").replacing( ">", with: "&gt;")
        let html = """
            <!doctype html>
            <html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
            <meta http-equiv="refresh" content="0; url=\(escaped)"><title>OpenReplayKit</title></head>
            <body><p><a href="\(escaped)">Continue to the page</a></p></body></html>

            """
        // O_EXCL | O_NOFOLLOW: a fresh file of ours, never one somebody put in its place.
        let fd = Glibc.open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw PageOpenerFailure(description: "cannot write \(file.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(html.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else {
            try? FileManager.default.removeItem(at: file)
            throw PageOpenerFailure(description: "cannot write \(file.path): \(String(cString: strerror(errno)))")
        }
        return file
    }

    private static func removeStale(in directory: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where name.hasSuffix(".html") {
            let file = directory.appendingPathComponent(name)
            let attributes = try? FileManager.default.attributesOfItem(atPath: file.path)
            let modified = attributes?[.modificationDate] as? Date ?? .distantPast
            if Date().timeIntervalSince(modified) > keep { try? FileManager.default.removeItem(at: file) }
        }
    }
}

/// Why a page could not be opened.
public struct PageOpenerFailure: Error, CustomStringConvertible {
    public let description: String
}
