import FoundationEssentials

/// Secrets a URL can carry, where everyone who sees the URL sees them too: a command line
/// (`/proc/PID/cmdline`), a log, a status line. A password in its user part, or a query
/// parameter named for a secret (SRT's `passphrase` and `streamid`, a `key`, a `token`…).
public enum URLSecrets {
    /// Query parameters that hold secrets, in any case.
    public static let parameterNames: Set<String> = ["passphrase", "streamid", "key", "token", "secret", "password", "passwd", "auth"]

    /// What secrets `text` carries when it is a URL (`scheme://…`): "a password" and the query
    /// parameters named above, as they are written; empty for anything else.
    public static func carried(by text: String) -> [String] {
        guard let schemeEnd = text.firstRange(of: "://") else { return [] }
        let rest = text[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        var found: [String] = []
        if let at = authority.lastIndex(of: "@"), authority[..<at].contains(":") { found.append("a password") }
        guard let question = rest.firstIndex(of: "?") else { return found }
        let query = rest[rest.index(after: question)...].prefix { $0 != "#" }
        for pair in query.split(separator: "&") {
            let name = String(pair.prefix { $0 != "=" })
            if parameterNames.contains(name.lowercased()) { found.append("\(name)=") }
        }
        return found
    }
}
