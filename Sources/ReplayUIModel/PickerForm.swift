public import ReplayIPC

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
    }

    /// What a setting shows at first: the app's suggestion for the one service it named, never a secret.
    public func initialValue(of field: ExtensionManifest.SetupField, in service: ExtensionManifest) -> String {
        guard field.kind != .secret, service.id == preferred else { return "" }
        return VisibleText.hasControlCharacters(suggested[field.key] ?? "") ? "" : suggested[field.key] ?? ""
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
                if field.required { return .failure(Problem(description: "\(field.label) is needed")) }
                continue
            }
            setup[field.key] = value
        }
        return .success(setup)
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
