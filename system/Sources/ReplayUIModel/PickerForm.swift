@_spi(OpenReplayKitInternal) public import ReplayIPC

/// What the broadcast picker says and sends, from the app's offer: the app as the desktop names
/// it, what would be broadcast, the services with their settings (an app's suggestions filled
/// in, never a secret), and the settings the person gave, checked before they are sent.
public struct PickerForm: Sendable, Equatable {
    public let title: String
    public let heading: String
    /// The executable: what identifies the app for sure.
    public let identity: String
    public let scopeLine: String
    /// Above the services: the only one named, or an invitation to choose.
    public let servicesLine: String
    public let iconLabel: String
    public let services: [ExtensionManifest]
    public let microphone: Bool

    private let suggested: [String: String]
    private let preferred: String?
    /// Each service's manifest file, by id: where a relative icon path starts.
    private let manifestPaths: [String: String]

    public init(_ offer: PickerOffer) {
        let name = VisibleText.of(offer.appName ?? String(offer.executable.split(separator: "/").last ?? Substring(offer.executable)))
        title = "Go live"
        heading = offer.scope == .app ? "\(name) wants to go live with its own windows" : "\(name) wants to go live with your screen"
        identity = VisibleText.of(offer.executable)
        scopeLine = offer.scope == .app
            ? "Only \(name)'s windows are broadcast; everything else is black."
            : "Everything on your screen is broadcast."
        iconLabel = "Icon of \(name)"
        services = (offer.extensions ?? []).map(\.manifest)
        switch services.count {
        case 0: servicesLine = "No broadcast service is installed."
        case 1: servicesLine = "Broadcast with \(VisibleText.of(services[0].displayName))."
        default: servicesLine = "Broadcast with:"
        }
        microphone = offer.microphone ?? false
        suggested = offer.suggestedSetup ?? [:]
        preferred = offer.extensions?.count == 1 ? offer.extensions?.first?.manifest.id : nil
        manifestPaths = Dictionary((offer.extensions ?? []).map { ($0.manifest.id, $0.manifestPath) }, uniquingKeysWith: { first, _ in first })
    }

    /// A service's icon as GTK takes it: an icon theme's name, or a file's absolute path (a
    /// relative one starts at the manifest's folder); nil for none.
    public func icon(of service: ExtensionManifest) -> String? {
        guard let icon = service.icon, !icon.isEmpty, !VisibleText.hasControlCharacters(icon) else { return nil }
        guard icon.contains("/") else { return icon }
        if icon.hasPrefix("/") { return icon }
        guard let manifest = manifestPaths[service.id], let slash = manifest.lastIndex(of: "/") else { return nil }
        return String(manifest[...slash]) + icon
    }

    /// What a setting shows at first: the app's suggestion for the one service it named (never
    /// a secret, and only one its field takes), else the field's default.
    public func initialValue(of field: ExtensionManifest.SetupField, in service: ExtensionManifest) -> String {
        let fallback = field.defaultValue.map(VisibleText.of) ?? ""
        guard field.kind != .secret, service.id == preferred, let suggestion = suggested[field.key],
              !VisibleText.hasControlCharacters(suggestion), field.problem(with: suggestion) == nil else { return fallback }
        return suggestion
    }

    /// The line under a service's name: what it is, as its manifest says.
    public func descriptionLine(of service: ExtensionManifest) -> String? {
        service.description.map(VisibleText.of)
    }

    /// The settings to send for `service` from what the person typed (`values` by key), or
    /// what is missing, in words.
    public func setup(for service: ExtensionManifest, values: [String: String]) -> Result<[String: String], Problem> {
        var setup: [String: String] = [:]
        for field in service.setupFields {
            // A secret is sent as typed; spaces around anything else are a slip of the keyboard.
            let typed = values[field.key] ?? ""
            let value = field.kind == .secret ? typed : typed.trimmingWhitespace
            if value.isEmpty {
                if field.required && field.defaultValue == nil { return .failure(Problem(description: "\(field.label) is needed")) }
                continue
            }
            if field.problem(with: value) != nil {
                let bounds = field.kind == .number ? Self.bounds(of: field) : ""
                return .failure(Problem(description: "\(field.label): \(field.kind == .choice ? "choose one" : "a number\(bounds)")"))
            }
            setup[field.key] = value
        }
        return .success(setup)
    }

    /// " from 1 to 30", " from 1", " up to 30", or nothing.
    static func bounds(of field: ExtensionManifest.SetupField) -> String {
        let shown = ExtensionManifest.SetupField.shown
        switch (field.minimum, field.maximum) {
        case (let low?, let high?): return " from \(shown(low)) to \(shown(high))"
        case (let low?, nil): return " from \(shown(low))"
        case (nil, let high?): return " up to \(shown(high))"
        case (nil, nil): return ""
        }
    }

    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// What the window shows once the broadcast started: live, and where it can be watched.
    public static func liveLine(_ status: BroadcastStatus) -> String {
        let info = status.serviceInfo.sorted { $0.key < $1.key }.map { "\($0.key): \(VisibleText.of($0.value))" }
        let url = status.broadcastURL.map { ["Watch at: \(VisibleText.of($0))"] } ?? []
        return (["Live with \(VisibleText.of(status.extensionID))."] + url + info).joined(separator: "\n")
    }
}

extension String {
    var trimmingWhitespace: String {
        var text = Substring(self)
        while text.first?.isWhitespace == true { text.removeFirst() }
        while text.last?.isWhitespace == true { text.removeLast() }
        return String(text)
    }
}
