import ReplayCaptureModel
import ReplaySystem

/// Decides whether a client is the person: their own, unmodified `replay`, run by the owner
/// in the daemon's own namespaces. Everything else is an app (docs/security.md).
///
/// A path is not enough: in a user and mount namespace of its own (`unshare -Urm`, a
/// bubblewrap or Flatpak sandbox) any program can be bound over `replay`'s path or folder;
/// and the real `replay` runs code of somebody else's choosing when started with
/// `LD_PRELOAD` or under a debugger.
struct PersonCheck: Sendable {
    let ownerUID: UInt32
    /// The person's tools: their paths, and the files they were when the daemon started.
    let trusted: [String: FileIdentity]

    init(ownerUID: UInt32, trustedExecutables: Set<String>) {
        self.ownerUID = ownerUID
        trusted = Dictionary(uniqueKeysWithValues: trustedExecutables.compactMap { path in
            FileIdentity(path: path).map { (path, $0) }
        })
    }

    enum Verdict: Equatable {
        case person
        /// An app; `mistrusted` says why when it looks like the person's tool but is not
        /// trusted as one (told to it, and logged).
        case app(mistrusted: String?)
    }

    func verdict(uid: UInt32, facts: ProcessFacts?) -> Verdict {
        guard uid == ownerUID, let facts, let path = facts.executable, let expected = trusted[path] else {
            return .app(mistrusted: nil)
        }
        guard facts.sharesNamespaces else {
            return .app(mistrusted: "it runs in another user or mount namespace (a sandbox, or unshare), where any program can stand at replay's path")
        }
        // The file at the path now, in our (shared) namespace: an upgrade replaces it.
        guard let file = facts.executableFile, file == expected || file == FileIdentity(path: path) else {
            return .app(mistrusted: "its executable is not the file installed at \(path)")
        }
        if !facts.loaderVariables.isEmpty {
            let names = facts.loaderVariables.joined(separator: ", ")
            return .app(mistrusted: "it was started with \(names) set, which loads other code into it; run it without")
        }
        if facts.isTraced {
            return .app(mistrusted: "a debugger is attached to it")
        }
        return .person
    }
}
