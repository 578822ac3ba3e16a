public import Logging
import ReplayIPC

/// A log handler that writes, through `base`, each message and metadata value with its control
/// characters shown, not obeyed (`VisibleText`): what comes from outside (an app's executable
/// in `peer=`, a window title, an extension's output) can neither forge a line of the log nor
/// rewrite the terminal of whoever reads it. replayd and its capture processes log through it.
public struct VisibleTextLog: LogHandler {
    private var base: any LogHandler

    public init(_ base: any LogHandler) { self.base = base }

    /// Standard error, as swift-log's `StreamLogHandler` writes it, made visible.
    public static func standardError(label: String) -> VisibleTextLog { VisibleTextLog(StreamLogHandler.standardError(label: label)) }

    public var logLevel: Logger.Level {
        get { base.logLevel }
        set { base.logLevel = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { base.metadataProvider }
        set { base.metadataProvider = newValue }
    }

    public var metadata: Logger.Metadata {
        get { base.metadata }
        set { base.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { base[metadataKey: key] }
        set { base[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        event.message = "\(VisibleText.of(event.message.description))"
        event.metadata = event.metadata.map(Self.visible)
        base.log(event: event)
    }

    private static func visible(_ metadata: Logger.Metadata) -> Logger.Metadata { metadata.mapValues(visible) }

    private static func visible(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(VisibleText.of(text))
        case .stringConvertible(let convertible): .string(VisibleText.of(convertible.description))
        case .array(let values): .array(values.map(visible))
        case .dictionary(let values): .dictionary(values.mapValues(visible))
        }
    }
}
