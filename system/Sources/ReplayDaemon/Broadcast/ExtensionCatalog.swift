import FoundationEssentials
import Logging
import ReplayCaptureModel
import ReplayIPC

/// The installed upload extensions: every `*.json` manifest in the system directory, the
/// person's own, and any `--extensions-dir`, read afresh on each look (installing one needs
/// no restart). A broken manifest is skipped with a warning, never fatal.
struct ExtensionCatalog: Sendable {
    let directories: [URL]
    let logger: Logger

    static func defaultDirectories(environment: [String: String] = ProcessInfo.processInfo.environment) -> [URL] {
        // /usr/lib: the Debian package's (executables belong under lib/, and lie beside their manifests).
        ExtensionFolders.paths(environment: environment, home: FileManager.default.homeDirectoryForCurrentUser.path).map { URL(fileURLWithPath: $0) }
    }

    /// Every valid upload extension; the first directory to define an id wins.
    func list() -> [ExtensionInfo] {
        var found: [String: ExtensionInfo] = [:]
        for directory in directories {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names.sorted() where name.hasSuffix(".json") {
                let path = directory.appendingPathComponent(name)
                guard let info = load(path), found[info.manifest.id] == nil else { continue }
                found[info.manifest.id] = info
            }
        }
        return found.values.sorted { $0.manifest.id < $1.manifest.id }
    }

    func find(_ id: String) -> ExtensionInfo? { list().first { $0.manifest.id == id } }

    /// The executable a manifest names, resolved, if it lies in the manifest's own folder: no
    /// `..`, and no symbolic link (of the file or a folder on the way) that leads out of it.
    /// The sandbox shows an extension its own folder, so only what is in it may be run.
    static func executable(_ named: String, besideManifestAt manifest: URL) -> String? {
        guard !named.isEmpty, !named.split(separator: "/").contains("..") else { return nil }
        let folder = manifest.deletingLastPathComponent().resolvingSymlinksInPath().path
        let candidate = named.hasPrefix("/") ? URL(fileURLWithPath: named) : manifest.deletingLastPathComponent().appendingPathComponent(named)
        let resolved = candidate.resolvingSymlinksInPath().path
        guard resolved.hasPrefix(folder + "/") else { return nil }
        return resolved
    }

    private func load(_ path: URL) -> ExtensionInfo? {
        do {
            var manifest = try JSONDecoder().decode(ExtensionManifest.self, from: Data(contentsOf: path))
            guard manifest.extensionPoint == ExtensionManifest.uploadExtensionPoint else { return nil }
            guard ExtensionManifest.isValidID(manifest.id) else {
                logger.warning("skipping extension manifest with an invalid id", metadata: ["manifest": "\(path.path)"])
                return nil
            }
            if let problem = manifest.definitionProblem {
                logger.warning("skipping extension manifest: \(problem)", metadata: ["manifest": "\(path.path)"])
                return nil
            }
            guard let executable = Self.executable(manifest.executable, besideManifestAt: path) else {
                logger.warning("skipping extension whose executable is not inside its own folder",
                               metadata: ["manifest": "\(path.path)", "executable": "\(manifest.executable)"])
                return nil
            }
            manifest.executable = executable
            guard FileManager.default.isExecutableFile(atPath: manifest.executable) else {
                logger.warning("skipping extension whose executable is missing",
                               metadata: ["manifest": "\(path.path)", "executable": "\(manifest.executable)"])
                return nil
            }
            return ExtensionInfo(manifest: manifest, manifestPath: path.path)
        } catch {
            logger.warning("skipping unreadable extension manifest", metadata: ["manifest": "\(path.path)", "error": "\(error)"])
            return nil
        }
    }
}
