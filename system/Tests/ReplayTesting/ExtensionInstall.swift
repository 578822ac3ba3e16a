public import Foundation
public import ReplayIPC
import ReplayVirtualDesktop

/// Installs extensions the way scripts/install-extensions does: each manifest with its
/// executable beside it (a hard link to the built one), since replayd runs only executables
/// that live in the manifest's own folder.
public enum ExtensionInstall {
    /// Writes `manifest` into `directory`, with its built executable (named by `manifest.executable`)
    /// linked in beside it; the manifest names it relative to itself.
    public static func install(_ manifest: ExtensionManifest, in directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let built = VirtualDesktop.siblingExecutable(URL(fileURLWithPath: manifest.executable).lastPathComponent)
        let installed = directory.appendingPathComponent(built.lastPathComponent)
        if !FileManager.default.fileExists(atPath: installed.path) {
            do {
                try FileManager.default.linkItem(at: built, to: installed)
            } catch {
                try FileManager.default.copyItem(at: built, to: installed)
            }
        }
        var relative = manifest
        relative.executable = built.lastPathComponent
        try JSONEncoder().encode(relative).write(to: directory.appendingPathComponent("\(manifest.id).json"))
    }
}
