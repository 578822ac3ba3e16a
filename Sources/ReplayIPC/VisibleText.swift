/// Text that came from outside (an executable's path, a window title, an extension's name or
/// output, a setup value) as it may be shown on a terminal, in a log or in a notification:
/// every control character written out instead of obeyed. A file named
/// `x\e[2K\e[1A\e[2K\rSystem update` could otherwise erase the lines above it and rewrite the
/// consent prompt; a newline could forge a line of the log.
public enum VisibleText {
    /// `text` with C0 and C1 control characters, DEL and the bidirectional overrides (which
    /// reorder what follows them on the screen) written as `\n`, `\r`, `\t`, `\e` or `\u{…}`.
    public static func of(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var shown = ""
        shown.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard isControl(scalar) else {
                shown.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": shown += "\\n"
            case "\r": shown += "\\r"
            case "\t": shown += "\\t"
            case "\u{1B}": shown += "\\e"
            default: shown += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return shown
    }

    /// Whether `text` holds a character `of` would write out: what a value that must stay one
    /// plain line (a setup value) is refused for.
    public static func hasControlCharacters(_ text: String) -> Bool { text.unicodeScalars.contains(where: isControl) }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x202A...0x202E, 0x2066...0x2069: true  // bidirectional embeddings, overrides and isolates
        default: false
        }
    }
}
