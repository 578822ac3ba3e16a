public import FoundationEssentials
public import ReplayCaptureModel
import ReplayIPC

/// Standing answers for unattended machines (kiosks, CI): a JSON file such as
/// `{"default": "ask", "apps": {"/usr/bin/obs": "allow", "/opt/tracker/bin/tracker": "deny"}}`.
/// Apps are matched by the executable the kernel reports, never by what they say.
public struct ConsentPolicy: Sendable, Equatable, Decodable {
    public enum Answer: String, Sendable, Decodable {
        case allow
        case deny
        /// Ask a consent agent (the default).
        case ask
    }

    public var `default`: Answer
    public var apps: [String: Answer]

    public init(default: Answer = .ask, apps: [String: Answer] = [:]) {
        self.default = `default`
        self.apps = apps
    }

    public static let askEveryone = ConsentPolicy()

    public static func load(from url: URL) throws(DaemonError) -> ConsentPolicy {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw DaemonError(code: .malformedRequest, message: "cannot read the consent policy \(url.path): \(error)")
        }
        do {
            var policy = try JSONDecoder().decode(ConsentPolicy.self, from: data)
            if let relative = policy.apps.keys.first(where: { !$0.hasPrefix("/") }) {
                throw DaemonError(code: .malformedRequest, message: "consent policy \(url.path): '\(relative)' is not an absolute executable path")
            }
            // The kernel names executables by their real path; so must the policy.
            policy.apps = Dictionary(policy.apps.map { (URL(fileURLWithPath: $0.key).resolvingSymlinksInPath().path, $0.value) },
                                     uniquingKeysWith: { first, _ in first })
            return policy
        } catch let error as DaemonError {
            throw error
        } catch {
            throw DaemonError(code: .malformedRequest, message: "consent policy \(url.path) is not valid: \(error)")
        }
    }

    enum CodingKeys: String, CodingKey {
        case `default`
        case apps
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        `default` = try container.decodeIfPresent(Answer.self, forKey: .default) ?? .ask
        apps = try container.decodeIfPresent([String: Answer].self, forKey: .apps) ?? [:]
    }

    func answer(for executable: String?) -> Answer {
        executable.flatMap { apps[$0] } ?? `default`
    }
}
