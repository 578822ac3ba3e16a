import FoundationEssentials

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
            /// A number, within `minimum` … `maximum` where the manifest gives them.
            case number
            /// One of `choices`.
            case choice
        }

        public var key: String
        public var label: String
        public var kind: Kind
        public var required: Bool
        /// What replayd hands the extension when the person leaves the field empty.
        public var defaultValue: String?
        /// A number's bounds, inclusive.
        public var minimum: Double?
        public var maximum: Double?
        /// A choice's values, as shown and as handed over.
        public var choices: [String]?

        public init(key: String, label: String, kind: Kind = .text, required: Bool = false, defaultValue: String? = nil,
                    minimum: Double? = nil, maximum: Double? = nil, choices: [String]? = nil) {
            self.key = key
            self.label = label
            self.kind = kind
            self.required = required
            self.defaultValue = defaultValue
            self.minimum = minimum
            self.maximum = maximum
            self.choices = choices
        }

        enum CodingKeys: String, CodingKey {
            case key, label, kind, required, minimum, maximum, choices
            case defaultValue = "default"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            key = try container.decode(String.self, forKey: .key)
            label = try container.decodeIfPresent(String.self, forKey: .label) ?? key
            kind = try container.decodeIfPresent(Kind.self, forKey: .kind) ?? .text
            required = try container.decodeIfPresent(Bool.self, forKey: .required) ?? false
            defaultValue = try container.decodeIfPresent(String.self, forKey: .defaultValue)
            minimum = try container.decodeIfPresent(Double.self, forKey: .minimum)
            maximum = try container.decodeIfPresent(Double.self, forKey: .maximum)
            choices = try container.decodeIfPresent([String].self, forKey: .choices)
        }

        /// The new keys only when set: the fields that do not use them read as before.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(key, forKey: .key)
            try container.encode(label, forKey: .label)
            try container.encode(kind, forKey: .kind)
            try container.encode(required, forKey: .required)
            try container.encodeIfPresent(defaultValue, forKey: .defaultValue)
            try container.encodeIfPresent(minimum, forKey: .minimum)
            try container.encodeIfPresent(maximum, forKey: .maximum)
            try container.encodeIfPresent(choices, forKey: .choices)
        }

        /// Why `value` does not suit this field (a number out of its range, not a number, not
        /// one of its choices), if it does not. Text, secrets and directories are checked elsewhere.
        public func problem(with value: String) -> String? {
            switch kind {
            case .number:
                guard let number = Double(value), number.isFinite else { return "\(key) must be a number, not '\(VisibleText.of(value))'" }
                if let minimum, number < minimum { return "\(key) must be at least \(Self.shown(minimum)) (given \(VisibleText.of(value)))" }
                if let maximum, number > maximum { return "\(key) must be at most \(Self.shown(maximum)) (given \(VisibleText.of(value)))" }
            case .choice:
                let choices = choices ?? []
                guard choices.contains(value) else {
                    return "\(key) must be one of \(choices.map { "'\($0)'" }.joined(separator: ", ")) (given '\(VisibleText.of(value))')"
                }
            case .text, .secret, .directory:
                break
            }
            return nil
        }

        /// Why the field itself is unusable, if it is: a choice with nothing to choose, bounds
        /// the wrong way round, a default that its own checks refuse.
        public var definitionProblem: String? {
            if kind == .choice && (choices ?? []).isEmpty { return "setup field '\(key)' is a choice with no choices" }
            if let minimum, let maximum, minimum > maximum { return "setup field '\(key)' has its minimum above its maximum" }
            if let defaultValue, let problem = problem(with: defaultValue) { return "the default of setup field '\(key)': \(problem)" }
            return nil
        }

        /// 30 rather than 30.0; 2.5 as it is.
        @_spi(OpenReplayKitInternal) public static func shown(_ number: Double) -> String {
            number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        }
    }

    public var id: String
    public var displayName: String
    /// A line saying what the service is, for the picker.
    public var description: String?
    /// An icon for the picker: a file (absolute, or relative to the manifest's directory) or an
    /// icon theme's name ("network-transmit").
    public var icon: String?
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
                hostNetwork: Bool = false, description: String? = nil, icon: String? = nil) {
        self.id = id
        self.displayName = displayName
        self.description = description
        self.icon = icon
        self.executable = executable
        self.extensionPoint = extensionPoint
        self.setupFields = setupFields
        self.hostNetwork = hostNetwork
    }

    enum CodingKeys: String, CodingKey { case id, displayName, description, icon, executable, extensionPoint, setupFields, hostNetwork }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        displayName = try container.decodeIfPresent(String.self, forKey: .displayName) ?? id
        description = try container.decodeIfPresent(String.self, forKey: .description)
        icon = try container.decodeIfPresent(String.self, forKey: .icon)
        executable = try container.decode(String.self, forKey: .executable)
        extensionPoint = try container.decode(String.self, forKey: .extensionPoint)
        setupFields = try container.decodeIfPresent([SetupField].self, forKey: .setupFields) ?? []
        hostNetwork = try container.decodeIfPresent(Bool.self, forKey: .hostNetwork) ?? false
    }

    /// `hostNetwork`, `description` and `icon` only when set: the manifests that do not use
    /// them read as before.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(displayName, forKey: .displayName)
        try container.encodeIfPresent(description, forKey: .description)
        try container.encodeIfPresent(icon, forKey: .icon)
        try container.encode(executable, forKey: .executable)
        try container.encode(extensionPoint, forKey: .extensionPoint)
        try container.encode(setupFields, forKey: .setupFields)
        if hostNetwork { try container.encode(true, forKey: .hostNetwork) }
    }

    /// Ids name files and show in pages: letters, digits, dots, dashes and underscores only.
    public static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 64 && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || ".-_".contains($0)) }
    }

    /// Why the manifest's setup fields are unusable, if they are (replayd skips such an extension).
    public var definitionProblem: String? {
        setupFields.lazy.compactMap(\.definitionProblem).first
    }

    /// `setup` with each empty or missing field that has a default given it: what the
    /// extension is handed.
    public func applyingDefaults(to setup: [String: String]) -> [String: String] {
        var filled = setup
        for field in setupFields {
            if let value = field.defaultValue, (filled[field.key] ?? "").isEmpty { filled[field.key] = value }
        }
        return filled
    }

    /// Why the setup a person gave does not suit this extension, if it does not (defaults
    /// applied first: `applyingDefaults`).
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
        for field in setupFields {
            guard let value = setup[field.key], !value.isEmpty, let problem = field.problem(with: value) else { continue }
            return problem
        }
        for field in setupFields where field.kind == .directory {
            guard let path = setup[field.key], !path.isEmpty else { continue }
            var isDirectory = false
            guard path.hasPrefix("/"), FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory else {
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
