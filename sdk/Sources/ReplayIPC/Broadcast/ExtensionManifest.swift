import Foundation

/// What an upload extension declares about itself: a JSON file beside (or naming) its
/// executable, found in the system and user extension directories.
public struct ExtensionManifest: Codable, Sendable, Equatable {
    public static let uploadExtensionPoint = "broadcast-services-upload"

    public struct SetupField: Codable, Sendable, Equatable {
        public enum Kind: String, Codable, Sendable {
            case text
            /// Shown masked, never logged.
            case secret
            /// A directory the person chooses; the only place on disk the sandbox lets the
            /// extension write.
            case directory
        }

        public var key: String
        public var label: String
        public var kind: Kind
        public var required: Bool

        public init(key: String, label: String, kind: Kind = .text, required: Bool = false) {
            self.key = key
            self.label = label
            self.kind = kind
            self.required = required
        }

        enum CodingKeys: String, CodingKey { case key, label, kind, required }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            key = try container.decode(String.self, forKey: .key)
            label = try container.decodeIfPresent(String.self, forKey: .label) ?? key
            kind = try container.decodeIfPresent(Kind.self, forKey: .kind) ?? .text
            required = try container.decodeIfPresent(Bool.self, forKey: .required) ?? false
        }
    }

    public var id: String
    public var displayName: String
    /// Absolute, or relative to the manifest's directory.
    public var executable: String
    public var extensionPoint: String
    public var setupFields: [SetupField]
    /// It keeps the host's network instead of a namespace of its own: it serves peers there
    /// (WebRTC's viewer page and ICE on the host's own addresses). It then sees the host's
    /// sockets in /proc/net; its TCP connects are still limited to its setup's ports.
    public var hostNetwork: Bool

    public init(id: String, displayName: String, executable: String,
                extensionPoint: String = ExtensionManifest.uploadExtensionPoint, setupFields: [SetupField] = [],
                hostNetwork: Bool = false) {
        self.id = id
        self.displayName = displayName
        self.executable = executable
        self.extensionPoint = extensionPoint
        self.setupFields = setupFields
        self.hostNetwork = hostNetwork
    }

    enum CodingKeys: String, CodingKey { case id, displayName, executable, extensionPoint, setupFields, hostNetwork }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        displayName = try container.decodeIfPresent(String.self, forKey: .displayName) ?? id
        executable = try container.decode(String.self, forKey: .executable)
        extensionPoint = try container.decode(String.self, forKey: .extensionPoint)
        setupFields = try container.decodeIfPresent([SetupField].self, forKey: .setupFields) ?? []
        hostNetwork = try container.decodeIfPresent(Bool.self, forKey: .hostNetwork) ?? false
    }

    /// `hostNetwork` only when set: the manifests that do not ask for it read as before.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(executable, forKey: .executable)
        try container.encode(extensionPoint, forKey: .extensionPoint)
        try container.encode(setupFields, forKey: .setupFields)
        if hostNetwork { try container.encode(true, forKey: .hostNetwork) }
    }

    /// Ids name files and show in pages: letters, digits, dots, dashes and underscores only.
    public static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 64 && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || ".-_".contains($0)) }
    }

    /// Why the setup a person gave does not suit this extension, if it does not.
    public func problem(with setup: [String: String]) -> String? {
        for field in setupFields where field.required && (setup[field.key] ?? "").isEmpty {
            return "extension '\(id)' needs --setup \(field.key)=… (\(field.label))"
        }
        let known = Set(setupFields.map(\.key))
        if let unknown = setup.keys.sorted().first(where: { !known.contains($0) }) {
            return "extension '\(id)' has no setup field '\(unknown)' (it has: \(setupFields.map(\.key).joined(separator: ", ")))"
        }
        // A value is one plain line: a NUL, an escape or a line break could end it early, or
        // rewrite a terminal or a log that shows it.
        if let (key, value) = setup.sorted(by: { $0.key < $1.key }).first(where: { VisibleText.hasControlCharacters($0.value) }) {
            let shown = setupFields.first { $0.key == key }?.kind == .secret ? "" : " ('\(VisibleText.of(value))')"
            return "the value of '\(key)'\(shown) holds a control character; a setup value is one line of plain text"
        }
        for field in setupFields where field.kind == .directory {
            guard let path = setup[field.key], !path.isEmpty else { continue }
            var isDirectory: ObjCBool = false
            guard path.hasPrefix("/"), FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                return "\(field.key) must be an existing directory, given as an absolute path"
            }
        }
        return nil
    }
}

/// An installed extension, as listed to clients.
public struct ExtensionInfo: Codable, Sendable, Equatable {
    public var manifest: ExtensionManifest
    /// Where it was found.
    public var manifestPath: String

    public init(manifest: ExtensionManifest, manifestPath: String) {
        self.manifest = manifest
        self.manifestPath = manifestPath
    }
}
