import FoundationEssentials
import ReplaySystem

/// What `replayd --check` says of the upload extensions' sandbox here, for the user replayd
/// runs as (with --system: 'replayd'): each part docs/security.md describes, there or not.
/// A part that is missing is a problem, not a silent fallback; what the kernel does not offer
/// (newer Landlock rules, delegated cgroups) is a note, since the documented fallback applies.
public enum SandboxCheck {
    /// One part of the sandbox, as found: there, missing, or a documented fallback.
    public struct Finding: Sendable, Equatable {
        public enum Kind: String, Sendable { case ok, problem, note }
        public let kind: Kind
        /// What was found, and for a problem what would fix it.
        public let text: String
    }

    /// Every part, in the order docs/security.md describes them.
    public static func findings() -> [Finding] {
        var findings: [Finding] = []
        if FileManager.default.isExecutableFile(atPath: ExtensionProcess.bubblewrap) {
            findings.append(ExtensionProcess.disablesUserNamespaces
                ? Finding(kind: .ok, text: "bubblewrap (\(ExtensionProcess.bubblewrap)) runs each extension in namespaces of its own, with no user namespace inside")
                : Finding(kind: .problem, text: "bubblewrap (\(ExtensionProcess.bubblewrap)) is older than 0.8: extensions could make user namespaces of their own"))
        } else {
            findings.append(Finding(kind: .problem, text: "bubblewrap (\(ExtensionProcess.bubblewrap)) is not installed: no extension can run (apt-get install bubblewrap)"))
        }
        if let missing = SandboxNetwork.unavailability() {
            findings.append(Finding(kind: .problem, text: "extensions would share the host's network, not get one of their own: "
                + "\(missing.reason). Fix: \(missing.fix)"))
        } else {
            findings.append(Finding(kind: .ok, text: "extensions get a network of their own (pasta, /dev/net/tun): of the host, only their setup's servers"))
        }
        for warning in [ExtensionProcess.landlockScopes(abi: ExtensionProcess.landlockABI).warning,
                        ExtensionProcess.landlockConnectRules(abi: ExtensionProcess.landlockABI).warning].compactMap({ $0 }) {
            findings.append(Finding(kind: .note, text: warning))
        }
        switch ExtensionProcess.cgroups {
        case .offered: findings.append(Finding(kind: .ok, text: "the kernel counts and limits each extension's memory (cgroup v2)"))
        case .notOffered(let why): findings.append(Finding(kind: .note, text: "replayd's walk counts extensions' memory, not the kernel's cgroup v2: \(why)"))
        }
        return findings
    }

}
