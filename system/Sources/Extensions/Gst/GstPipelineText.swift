/// The whole pipeline description, built from the person's tail: the extension's pictures
/// come from an appsrc before the tail; when the tail names `audio.` (a branch it links, as
/// `audio. ! voaacenc ! mux.`), the broadcast's sound comes from a second appsrc, converted and
/// resampled for whatever encoder takes it, ending in a queue named `audio`.
struct GstPipelineText: Sendable, Equatable {
    /// The names the extension's own elements take; a tail may not use them.
    static let reservedNames = ["replay-video", "replay-video-queue", "replay-audio", "replay-audio-convert", "replay-audio-resample", "audio"]

    /// The description GStreamer parses, with the secret in place.
    let description: String
    /// The same with the secret written as `{key}`: what may be shown or logged.
    let shown: String
    /// Whether the tail takes the broadcast's sound (it names `audio.`).
    let takesAudio: Bool
    /// The extension's own elements, as the check expects to find them.
    let head: [GstParsedElement]

    init(settings: GstSettings) {
        takesAudio = Self.linksAudio(settings.tail)
        var head = [GstParsedElement(factory: "appsrc", name: "replay-video"), GstParsedElement(factory: "queue", name: "replay-video-queue")]
        // The newest pictures matter most: a pipeline that falls behind drops old ones here
        // rather than holding seconds of raw pictures against the 50 MB limit.
        var text = "appsrc name=replay-video ! queue name=replay-video-queue leaky=downstream max-size-buffers=3 max-size-bytes=0 max-size-time=0 ! "
            + settings.tail
        if takesAudio {
            text += " appsrc name=replay-audio ! audioconvert name=replay-audio-convert ! audioresample name=replay-audio-resample"
                + " ! queue name=audio max-size-time=1000000000 max-size-buffers=0 max-size-bytes=0"
            head += [GstParsedElement(factory: "appsrc", name: "replay-audio"),
                     GstParsedElement(factory: "audioconvert", name: "replay-audio-convert"),
                     GstParsedElement(factory: "audioresample", name: "replay-audio-resample"),
                     GstParsedElement(factory: "queue", name: "audio")]
        }
        self.head = head
        shown = text
        description = settings.key.map { text.replacing(GstSettings.keyPlaceholder, with: $0) } ?? text
    }

    /// Whether `tail` links the sound branch: a word that starts with `audio.` (not a host
    /// name or a file name that merely contains it).
    static func linksAudio(_ tail: String) -> Bool {
        words(of: tail).contains { $0.hasPrefix("audio.") }
    }

    /// The tail split where gst-launch splits it: at spaces and `!`, quoted text kept whole.
    static func words(of text: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quote: Character?
        for character in text {
            if let open = quote {
                current.append(character)
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
                current.append(character)
            } else if character == " " || character == "\t" || character == "!" {
                if !current.isEmpty { words.append(current) }
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    /// `text` with the secret replaced by `{key}`: GStreamer's messages name locations.
    static func redacting(_ text: String, key: String?) -> String {
        guard let key, !key.isEmpty else { return text }
        return text.replacing(key, with: GstSettings.keyPlaceholder)
    }
}
