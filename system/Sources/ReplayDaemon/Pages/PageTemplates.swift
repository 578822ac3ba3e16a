import FoundationEssentials
import ReplaySystem
import ReplayCaptureModel
import ReplayIPC

/// The HTML of the loopback pages. Everything that comes from an app (its executable path
/// above all) is escaped: an app must not be able to restyle the page that asks about it.
enum PageTemplates {
    static func consent(_ prompt: ConsentPrompt, lapse: Duration = .seconds(480)) -> String {
        let app = escape(prompt.executable)
        let name = escape(appName(prompt))
        return page(title: "Allow \(name) to capture?", body: """
            <h1>Allow <em>\(name)</em> to capture \(escape(prompt.capturedThings))?</h1>
            <p class="who">\(app)<br>process \(prompt.pid), user \(prompt.uid)</p>
            <ul>
              <li>Screen: \(prompt.screen ? (prompt.ownWindowsOnly == true ? "<strong>only its own windows</strong> (the rest black)" : "<strong>yes</strong>") : "no")</li>
              <li>App audio: \(prompt.appAudio ? "<strong>yes</strong>" : "no")</li>
              <li>Microphone: \(prompt.microphone ? "<strong>yes</strong>" : "no")</li>
            </ul>
            <p>Until this app quits, or goes \(minutes(lapse)) without focus or capture. Windows it marks as protected stay black.</p>
            <form method="post" action="/consent/\(escape(prompt.requestID))">
              <button id="deny" name="answer" value="deny">Don't Allow</button>
              <button id="allow" name="answer" value="allow" class="primary">Allow</button>
            </form>
            """)
    }

    private static func minutes(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        return seconds % 60 == 0 ? "\(seconds / 60) minute\(seconds == 60 ? "" : "s")" : "\(seconds) seconds"
    }

    /// The app as the desktop names it (its `.desktop` entry), else its executable's file name;
    /// the page shows the path as well.
    private static func appName(_ prompt: ConsentPrompt) -> String {
        prompt.appName ?? URL(fileURLWithPath: prompt.executable).lastPathComponent
    }

    static func answered(_ prompt: ConsentPrompt, allowed: Bool) -> String {
        let name = escape(appName(prompt))
        return page(title: allowed ? "Allowed" : "Declined", body: """
            <h1 id="result">\(allowed ? "Allowed" : "Declined")</h1>
            <p>\(name) \(allowed ? "may now capture" : "will not capture") \(escape(prompt.capturedThings)).</p>
            """)
    }

    static func preview(_ info: RecordingInfo) -> String {
        let id = escape(info.id)
        let movie = "/preview/\(id)/movie"
        return page(title: "Recording \(id)", body: """
            <h1>Recording \(id)</h1>
            <video id="movie" controls autoplay muted src="\(movie)"></video>
            <p class="who">\(String(printf: "%.1f", info.duration)) s, \(info.width)x\(info.height)\
            \(info.error.map { ", ended early: " + escape($0) } ?? "")</p>
            <p><a id="save" class="button primary" href="\(movie)?download=1" download="\(id).mp4">Save</a></p>
            <form method="post" action="/preview/\(id)/delete">
              <button id="delete">Delete</button>
            </form>
            """)
    }

    static func deleted(_ id: String) -> String {
        page(title: "Deleted", body: "<h1 id=\"result\">Deleted</h1><p>Recording \(escape(id)) is gone from the store.</p>")
    }

    static func picker(_ extensions: [ExtensionInfo], picker: BroadcastPickers.Picker, pickerID: String) -> String {
        let app = escape(URL(fileURLWithPath: picker.hostPeer.executable ?? "An app").lastPathComponent)
        guard !extensions.isEmpty else {
            return page(title: "Broadcast", body: "<h1>No broadcast service is installed</h1><p>\(app) asked to go live.</p>")
        }
        // What the app filled in, for its preferred extension only; secrets were refused before.
        func suggested(_ field: ExtensionManifest.SetupField, of manifest: ExtensionManifest) -> String? {
            guard manifest.id == picker.preferredExtension, field.kind != .secret else { return nil }
            return picker.suggestedSetup[field.key]
        }
        let choices = extensions.enumerated().map { index, info in
            let manifest = info.manifest
            let fields = manifest.setupFields.map { field in
                // Named per service: two services may both have a `url`, and only the chosen one's count.
                let name = "name=\"setup.\(escape(manifest.id)).\(escape(field.key))\" id=\"setup-\(escape(manifest.id))-\(escape(field.key))\""
                let initial = suggested(field, of: manifest) ?? field.defaultValue
                if field.kind == .choice, let options = field.choices {
                    let shown = options.map { option in
                        "<option value=\"\(escape(option))\"\(option == initial ? " selected" : "")>\(escape(option))</option>"
                    }.joined()
                    return "<label>\(escape(field.label))\n  <select \(name)>\(shown)</select>\n</label>"
                }
                let type = field.kind == .secret ? "password" : field.kind == .number ? "number" : "text"
                let bounds = [field.minimum.map { " min=\"\($0)\"" }, field.maximum.map { " max=\"\($0)\"" }].compactMap { $0 }.joined()
                return """
                <label>\(escape(field.label))\(field.required && field.defaultValue == nil ? " *" : "")
                  <input \(name)
                         type="\(type)"\(field.kind == .number ? " step=\"any\"" + bounds : "")\(field.kind == .directory ? " placeholder=\"/absolute/path\"" : "")\
                \(initial.map { " value=\"\(escape($0))\"" } ?? "")>
                </label>
                """
            }.joined(separator: "\n")
            let description = manifest.description.map { "<p>\(escape($0))</p>" } ?? ""
            return """
                <fieldset>
                  <label><input type="radio" name="extension" value="\(escape(manifest.id))" id="extension-\(escape(manifest.id))"\(index == 0 ? " checked" : "")>
                  <strong>\(escape(manifest.displayName))</strong></label>
                  \(description)
                  \(fields)
                </fieldset>
                """
        }.joined(separator: "\n")
        let heading: String, what: String
        switch picker.scope {
        case .screen:
            heading = "\(app) wants to go live with your whole screen"
            what = """
                Choose where to broadcast <strong id="scope" data-scope="screen">your whole screen</strong>. The service gets \
                everything on the screen (except windows their apps protect) and the sound the computer plays; \(app) only learns whether you are live.
                """
        case .app:
            heading = "\(app) wants to broadcast its own windows"
            what = """
                Choose where to broadcast <strong id="scope" data-scope="app">only \(app)'s own windows</strong>: \
                the rest of the screen stays black, and the pointer is not shown. The service also gets the sound \
                the computer plays (all of it, not only \(app)'s); \(app) only learns whether you are live.
                """
        }
        return page(title: "Start broadcast", body: """
            <h1>\(heading)</h1>
            <p>\(what)</p>
            <form method="post" action="/picker/\(escape(pickerID))">
              \(choices)
              <label><input type="checkbox" name="microphone" id="microphone"\(picker.microphone ? " checked" : "")> Microphone</label>
              <p><button id="start" class="primary">Start Broadcast</button></p>
            </form>
            """)
    }

    static func pickerResult(_ status: BroadcastStatus?, error: String?, pickerID: String? = nil) -> String {
        guard let status else {
            return page(title: "Not started", body: "<h1 id=\"result\">Not started</h1><p id=\"error\">\(escape(error ?? ""))</p>")
        }
        let stop = pickerID.map { pickerID in
            """
            <form method="post" action="/picker/\(escape(pickerID))/stop">
              <button id="stop">Stop Broadcast</button>
            </form>
            """
        } ?? ""
        return page(title: status.state == .live ? "Live" : status.state.rawValue, body: """
            <h1 id="result">\(status.state == .live ? "Live" : escape(status.state.rawValue.capitalized))</h1>
            <p>\(escape(status.extensionID))\(status.scope == .app ? " (the app's own windows)" : "")\(status.lastError.map { ": " + escape($0) } ?? "")</p>
            \(stop)
            """)
    }

    private static func page(title: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>\(title) · OpenReplayKit</title>
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <style>
          body { font: 16px system-ui, sans-serif; max-width: 44rem; margin: 3rem auto; padding: 0 1rem; color: #222; }
          .who { color: #666; font-size: 14px; word-break: break-all; }
          video { width: 100%; background: #000; }
          button, .button { font: inherit; padding: .5rem 1.2rem; margin-right: .5rem; border: 1px solid #888;
                            border-radius: 6px; background: #fff; color: #222; text-decoration: none; cursor: pointer; }
          fieldset { border: 1px solid #ccc; border-radius: 6px; margin: 0 0 1rem; }
          fieldset label { display: block; margin: .3rem 0; }
          .primary { background: #0a63d1; border-color: #0a63d1; color: #fff; }
        </style></head>
        <body>
        \(body)
        </body></html>
        """
    }

    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
