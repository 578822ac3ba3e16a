#if canImport(Glibc)
import Glibc
#endif

extension String {
    /// `printf`'s numeric formats (`%.1f`, `%8.1f`, `%g`, `%06x`…), in place of Foundation's
    /// `String(format:)`. Takes numbers only: `%@` and `%s` have no place here.
    public init(printf format: String, _ arguments: any CVarArg...) {
        let size = withVaList(arguments) { vsnprintf(nil, 0, format, $0) }
        guard size > 0 else {
            self = ""
            return
        }
        var buffer = [CChar](repeating: 0, count: Int(size) + 1)
        _ = withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) }
        self = String(decoding: buffer.prefix(Int(size)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension StringProtocol {
    /// Without the spaces and tabs at either end (Foundation's `.whitespaces`).
    public func trimmingSpaces() -> String { trimming { $0 == " " || $0 == "\t" || ($0.isWhitespace && !$0.isNewline) } }

    /// Without the white space and line breaks at either end (Foundation's `.whitespacesAndNewlines`).
    public func trimmingWhitespace() -> String { trimming { $0.isWhitespace } }

    private func trimming(_ drop: (Character) -> Bool) -> String {
        guard let first = firstIndex(where: { !drop($0) }), let last = lastIndex(where: { !drop($0) }) else { return "" }
        return String(self[first...last])
    }
}

/// The local time, as the C library writes it (`strftime`): no ICU calendar behind it.
public enum LocalTime {
    /// `seconds` since 1970 in `format` (`%Y-%m-%d %H:%M`), in this machine's time zone.
    public static func string(_ seconds: Double, format: String) -> String {
        var time = time_t(seconds.rounded(.down))
        var parts = tm()
        guard localtime_r(&time, &parts) != nil else { return "" }
        var buffer = [CChar](repeating: 0, count: 128)
        let count = strftime(&buffer, buffer.count, format, &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension StringProtocol {
    /// With each `%XX` as the byte it stands for; nil where one is malformed or the bytes are
    /// not UTF-8 (Foundation's `removingPercentEncoding`).
    public func removingPercentEncoding() -> String? {
        var bytes: [UInt8] = []
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(),
                  let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(value)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
