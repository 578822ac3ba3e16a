/// An element of a parsed pipeline as the checks see it: which factory made it, its name, and
/// the values of the properties that say where it writes or connects (as GStreamer holds them
/// after parsing, whatever way the tail spelled them).
struct GstParsedElement: Sendable, Equatable {
    var factory: String
    var name: String
    var properties: [String: String]

    init(factory: String, name: String = "", properties: [String: String] = [:]) {
        self.factory = factory
        self.name = name
        self.properties = properties
    }
}

/// The elements a tail may hold, and what each may do. Anything else is refused by name before
/// the pipeline plays: an element that runs a program, reads files, opens a descriptor (fdsink
/// on the extension's connection), or reaches a server the setup does not name.
enum GstAllowedElements {
    struct Refusal: Error, CustomStringConvertible, Equatable {
        let description: String
    }

    static let encoders: Set<String> = ["x264enc", "x265enc", "openh264enc", "vp8enc", "vp9enc",
                                        "voaacenc", "opusenc", "lamemp3enc", "vorbisenc", "flacenc"]
    static let parsers: Set<String> = ["h264parse", "h265parse", "vp9parse", "aacparse", "mpegaudioparse", "opusparse", "flacparse"]
    static let muxers: Set<String> = ["flvmux", "mp4mux", "qtmux", "matroskamux", "webmmux", "mpegtsmux", "oggmux"]
    static let plumbing: Set<String> = ["queue", "capsfilter", "tee", "videoconvert", "videoscale", "videorate",
                                        "audioconvert", "audioresample", "audiorate"]
    /// Sinks, each with the properties that must stay where the sandbox lets it go.
    static let sinks: Set<String> = ["filesink", "hlssink2", "rtmp2sink", "srtsink"]
    static var all: Set<String> { encoders.union(parsers).union(muxers).union(plumbing).union(sinks) }

    /// The properties each element writes to or connects with, or that would hand it text
    /// of a library's own to obey (x264's and x265's option strings can name files to write).
    static let checkedProperties: [String: [String]] = [
        "filesink": ["location"],
        "hlssink2": ["location", "playlist-location"],
        "rtmp2sink": ["location"],
        "srtsink": ["uri"],
        "mp4mux": ["moov-recovery-file"],
        "qtmux": ["moov-recovery-file"],
        "x264enc": ["pass", "option-string"],
        "x265enc": ["option-string"],
        "vp8enc": ["multipass-mode"],
        "vp9enc": ["multipass-mode"],
        "mpegtsmux": ["alignment"],
    ]

    /// The plugins (libgstNAME.so) that hold the allowed elements, the extension's own
    /// (appsrc), and what hlssink2 makes inside itself (multifile's splitmuxsink): only these
    /// are loaded, so no element of another plugin exists in the extension at all.
    static let plugins = ["coreelements", "app", "videoconvertscale", "videorate", "audioconvert", "audioresample", "audiorate",
                          "x264", "x265", "openh264", "vpx", "voaacenc", "opus", "lame", "vorbis", "flac", "videoparsersbad",
                          "audioparsers", "opusparse", "flv", "isomp4", "matroska", "mpegtsmux", "ogg", "rtmp2", "srt", "hls", "multifile"]

    /// The text that names the allowed elements, in a refusal.
    static var listed: String {
        [("encoders", encoders), ("parsers", parsers), ("muxers", muxers), ("plumbing", plumbing), ("sinks", sinks)]
            .map { "\($0.0): \($0.1.sorted().joined(separator: ", "))" }.joined(separator: "; ")
    }

    /// Refuses what the tail cannot ask for, before GStreamer parses it: a child's property
    /// (`bin::child::property`), which would reach inside an allowed element, and the
    /// extension's own sources' names.
    static func checkText(_ tail: String) throws(Refusal) {
        // `child::property=value`: the name before the `=`, so an IPv6 address in a value
        // (`uri=srt://[::1]:9000`) is no child's property.
        if GstPipelineText.words(of: tail).contains(where: { $0.prefix { $0 != "=" }.contains("::") }) {
            throw Refusal(description: "the pipeline sets a property of an element's child ('::'); only the elements' own properties may be set")
        }
        let words = Set(GstPipelineText.words(of: tail).map { $0.filter { $0 != "\"" && $0 != "'" } })
        for reserved in GstPipelineText.reservedNames where words.contains("name=\(reserved)") {
            throw Refusal(description: "the name '\(reserved)' is the extension's own; name your element otherwise")
        }
    }

    /// Checks every element GStreamer made from the description: the extension's own head,
    /// then only allowed elements, at least one sink, and every sink where it may go.
    static func check(_ elements: [GstParsedElement], head: [GstParsedElement], directory: String?) throws(Refusal) {
        var ownLeft = head
        var sinkCount = 0
        for element in elements {
            if let own = ownLeft.firstIndex(where: { $0.name == element.name && $0.factory == element.factory }) {
                ownLeft.remove(at: own)
                continue
            }
            guard all.contains(element.factory) else {
                let what = element.factory.isEmpty ? "an element with no factory ('\(element.name)')" : "'\(element.factory)'"
                throw Refusal(description: "the pipeline holds \(what), which the gst extension does not allow. Allowed: \(listed)")
            }
            if sinks.contains(element.factory) { sinkCount += 1 }
            try checkProperties(element, directory: directory)
        }
        guard sinkCount > 0 else {
            throw Refusal(description: "the pipeline ends in no sink: end it in \(sinks.sorted().joined(separator: ", "))")
        }
        // SRT's live mode sends a message of at most 1316 bytes: seven TS packets. mpegtsmux's
        // default buffers are larger, and srtsink loses them without a word (only small audio
        // packets arrived in a test).
        if elements.contains(where: { $0.factory == "srtsink" }),
           elements.contains(where: { $0.factory == "mpegtsmux" && $0.properties["alignment"] != "7" }) {
            throw Refusal(description: "mpegtsmux before srtsink needs alignment=7 (seven TS packets per SRT message); without it SRT drops the video")
        }
    }

    private static func checkProperties(_ element: GstParsedElement, directory: String?) throws(Refusal) {
        let value = { (property: String) in element.properties[property].flatMap { $0.isEmpty ? nil : $0 } }
        switch element.factory {
        case "filesink", "hlssink2":
            for property in checkedProperties[element.factory] ?? [] {
                let path = element.properties[property] ?? ""
                guard let directory else {
                    throw Refusal(description: "\(element.factory) writes files, and only in the folder of the setting 'dir', which is empty")
                }
                guard GstPaths.isInside(path, directory: directory) else {
                    let shown = path.isEmpty ? "not set" : "'\(path)'"
                    throw Refusal(description: "\(element.factory)'s \(property) is \(shown): it must be a file inside \(directory) (the setting 'dir'), the only folder the extension may write in")
                }
            }
        case "rtmp2sink":
            let location = element.properties["location"] ?? ""
            guard location.hasPrefix("rtmp://") || location.hasPrefix("rtmps://") else {
                throw Refusal(description: "rtmp2sink needs location=rtmp://host[:port]/app/stream (its server, named in the setup)")
            }
        case "srtsink":
            let uri = element.properties["uri"] ?? ""
            guard uri.hasPrefix("srt://"), uri.count > "srt://".count else {
                throw Refusal(description: "srtsink needs uri=srt://host:port (its listener, named in the setup)")
            }
        case "mp4mux", "qtmux":
            if let file = value("moov-recovery-file"), !(directory.map { GstPaths.isInside(file, directory: $0) } ?? false) {
                throw Refusal(description: "\(element.factory)'s moov-recovery-file must be inside the folder of the setting 'dir'")
            }
        case "x264enc", "x265enc":
            if value("option-string") != nil {
                throw Refusal(description: "\(element.factory)'s option-string is not allowed (it can make the encoder write files): set its properties instead")
            }
            if let pass = value("pass"), pass.lowercased().contains("pass") {
                throw Refusal(description: "x264enc's multipass modes write a statistics file; use pass=cbr, quant or qual")
            }
        case "vp8enc", "vp9enc":
            if let mode = value("multipass-mode"), !mode.lowercased().contains("one") {
                throw Refusal(description: "\(element.factory)'s multipass modes write a statistics file; leave multipass-mode at one-pass")
            }
        default:
            break
        }
    }
}

/// Paths as the checks compare them: absolute, `.` and `..` resolved by their text.
enum GstPaths {
    static func normalized(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Whether `path` names a file below `directory` (not the folder itself). A path given
    /// with `..` is refused outright, even when it would land inside.
    static func isInside(_ path: String, directory: String) -> Bool {
        guard path.hasPrefix("/"), !path.split(separator: "/").contains("..") else { return false }
        let folder = normalized(directory)
        let file = normalized(path)
        return file.hasPrefix(folder == "/" ? "/" : folder + "/") && file != folder
    }
}
