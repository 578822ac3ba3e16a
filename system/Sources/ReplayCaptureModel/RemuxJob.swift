public import ReplayIPC

/// An export's conversion, run in a `replay-capture --remux` process: the movie's streams in
/// `container`, only the span [`span.lowerBound`, `span.upperBound`) seconds when there is one.
/// Its command line is written by replayd and read by replay-capture, both here.
public struct RemuxJob: Sendable, Equatable {
    public var container: MovieContainer
    public var span: Range<Double>?

    public init(container: MovieContainer, span: Range<Double>? = nil) {
        self.container = container
        self.span = span
    }

    /// `--remux --container mp4|matroska [--from S --to E]`.
    public var arguments: [String] {
        var arguments = ["--remux", "--container", container.rawValue]
        if let span { arguments += ["--from", "\(span.lowerBound)", "--to", "\(span.upperBound)"] }
        return arguments
    }

    /// Reads `arguments` (the program's name left out); nil when they are not a job's.
    public init?(arguments: [String]) {
        guard arguments.count == 3 || arguments.count == 7, arguments[0] == "--remux", arguments[1] == "--container",
              let container = MovieContainer(rawValue: arguments[2]) else { return nil }
        guard arguments.count == 7 else {
            self.init(container: container)
            return
        }
        guard arguments[3] == "--from", arguments[5] == "--to", let from = Double(arguments[4]), let to = Double(arguments[6]),
              from.isFinite, to.isFinite, from >= 0, from < to else { return nil }
        self.init(container: container, span: from..<to)
    }
}
