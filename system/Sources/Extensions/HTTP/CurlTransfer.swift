import CCurl
import CCurlShim
import FoundationEssentials

/// One request's libcurl handles and what they receive. The easy handle is run by a multi
/// handle of its own only so that `curl_multi_wakeup` can end its wait from another thread
/// (`HTTPClient.cancel`).
final class CurlTransfer {
    private let easy: UnsafeMutableRawPointer
    private let multi: UnsafeMutableRawPointer
    private let url: URL
    /// The request's timeout, in milliseconds: libcurl ends the transfer then.
    private let timeoutMilliseconds: Int
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
    private let received = Received()

    /// What the callbacks collect, on the thread that runs the transfer.
    private final class Received {
        var body: [UInt8] = []
        var headers: [HTTPField] = []
        var tooLarge = false
    }

    /// Wakes the transfer's wait from another thread.
    struct Waker: @unchecked Sendable {
        // @unchecked: curl_multi_wakeup is the one multi call libcurl allows from any thread,
        // and `HTTPClient` drops the waker under its lock before the handle is freed.
        fileprivate let multi: UnsafeMutableRawPointer
        func wake() { _ = curl_multi_wakeup(multi) }
    }

    var waker: Waker { Waker(multi: multi) }

    init(_ request: HTTPRequest) throws(HTTPError) {
        guard let easy = curl_easy_init() else { throw HTTPError(.failed, "libcurl could not make a handle") }
        guard let multi = curl_multi_init() else {
            curl_easy_cleanup(easy)
            throw HTTPError(.failed, "libcurl could not make a handle")
        }
        self.easy = easy
        self.multi = multi
        url = request.url
        timeoutMilliseconds = max(1, Int((min(request.timeout, 86_400) * 1000).rounded(.up)))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        try configure(request)
        guard curl_multi_add_handle(multi, easy) == CURLM_OK else { throw HTTPError(.failed, "libcurl could not start the transfer") }
    }

    deinit {
        curl_multi_remove_handle(multi, easy)
        curl_easy_cleanup(easy)
        curl_multi_cleanup(multi)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    private func configure(_ request: HTTPRequest) throws(HTTPError) {
        try set("URL", CCurl_set_string(easy, CURLOPT_URL, request.url.absoluteString))
        try set("protocols", CCurl_set_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"))
        try set("redirect protocols", CCurl_set_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"))
        try set("redirects", CCurl_set_long(easy, CURLOPT_FOLLOWLOCATION, 1))
        try set("redirect limit", CCurl_set_long(easy, CURLOPT_MAXREDIRS, 5))
        // No signals (SIGALRM for name resolution) in a process of many threads.
        try set("signals", CCurl_set_long(easy, CURLOPT_NOSIGNAL, 1))
        try set("timeout", CCurl_set_long(easy, CURLOPT_TIMEOUT_MS, timeoutMilliseconds))
        try set("error buffer", CCurl_set_error_buffer(easy, errorBuffer))

        switch request.method {
        case "GET" where request.body.isEmpty:
            try set("GET", CCurl_set_long(easy, CURLOPT_HTTPGET, 1))
        case "HEAD" where request.body.isEmpty:
            try set("HEAD", CCurl_set_long(easy, CURLOPT_NOBODY, 1))
        default:
            if request.method == "POST" || !request.body.isEmpty {
                // A body of 0 bytes still needs a pointer.
                let bytes = request.body.isEmpty ? [0] : request.body
                let size = request.body.count
                try set("body", bytes.withUnsafeBytes { CCurl_set_body(easy, $0.baseAddress, size) })
            }
            if request.method != "POST" { try set("method", CCurl_set_string(easy, CURLOPT_CUSTOMREQUEST, request.method)) }
        }

        // "Expect:" empty: no 100-continue round trip before a body.
        for line in request.headers.map({ "\($0.name): \($0.value)" }) + ["Expect:"] {
            guard let list = curl_slist_append(headerList, line) else { throw HTTPError(.failed, "libcurl could not list the headers") }
            headerList = list
        }
        try set("headers", CCurl_set_headers(easy, headerList))

        let context = Unmanaged.passUnretained(received).toOpaque()
        try set("body callback", CCurl_set_write_callback(easy, { data, size, count, context in
            let received = Unmanaged<Received>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            guard received.body.count + length <= HTTPClient.maximumBodySize else {
                received.tooLarge = true
                return 0
            }
            if let data { received.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length)) }
            return length
        }, context))
        try set("header callback", CCurl_set_header_callback(easy, { data, size, count, context in
            let received = Unmanaged<Received>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            guard let data else { return length }
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
            if line.hasPrefix("HTTP/") {
                // A new response (after a redirect or a 100 Continue): only the last one's headers count.
                received.headers = []
            } else if let colon = line.firstIndex(of: ":") {
                let value = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
                received.headers.append(HTTPField(String(line[..<colon]), String(value.prefix { !$0.isNewline })))
            }
            return length
        }, context))
    }

    private func set(_ what: String, _ code: CURLcode) throws(HTTPError) {
        guard code == CURLE_OK else { throw HTTPError(.failed, "libcurl refused the request's \(what): \(Self.describe(code))") }
    }

    /// Runs the transfer to its end; `isCancelled` is asked after every wake-up.
    func run(isCancelled: () -> Bool) throws(HTTPError) -> HTTPResponse {
        while true {
            var running: Int32 = 0
            let performed = curl_multi_perform(multi, &running)
            guard performed == CURLM_OK else {
                throw HTTPError(.failed, "libcurl failed: \(String(cString: curl_multi_strerror(performed)))")
            }
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                guard message.pointee.msg == CURLMSG_DONE else { continue }
                return try finished(CCurl_message_result(message))
            }
            if isCancelled() { throw HTTPError(.cancelled, "cancelled") }
            // Waits for the sockets, libcurl's next timer (the request's timeout among them) or
            // `cancel`'s wake-up; the bound adds no wake-up of its own.
            _ = curl_multi_poll(multi, nil, 0, Int32(clamping: timeoutMilliseconds + 1000), nil)
            if isCancelled() { throw HTTPError(.cancelled, "cancelled") }
        }
    }

    private func finished(_ result: CURLcode) throws(HTTPError) -> HTTPResponse {
        guard result == CURLE_OK else { throw error(for: result) }
        var status = 0
        var effective: UnsafePointer<CChar>?
        _ = CCurl_get_long(easy, CURLINFO_RESPONSE_CODE, &status)
        _ = CCurl_get_string(easy, CURLINFO_EFFECTIVE_URL, &effective)
        let answeredFrom = effective.flatMap { URL(string: String(cString: $0)) } ?? url
        return HTTPResponse(status: status, headers: received.headers, body: received.body, url: answeredFrom)
    }

    private func error(for result: CURLcode) -> HTTPError {
        let detail = errorBuffer.pointee == 0 ? Self.describe(result) : String(cString: errorBuffer)
        switch result {
        case CURLE_COULDNT_RESOLVE_HOST: return HTTPError(.couldNotResolve, detail)
        case CURLE_COULDNT_CONNECT: return HTTPError(.couldNotConnect, detail)
        case CURLE_OPERATION_TIMEDOUT: return HTTPError(.timedOut, detail)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS:
            return HTTPError(.tls, detail)
        case CURLE_WRITE_ERROR where received.tooLarge:
            return HTTPError(.tooLarge, "the answer's body is larger than \(HTTPClient.maximumBodySize >> 20) MiB")
        default: return HTTPError(.failed, detail)
        }
    }

    private static func describe(_ code: CURLcode) -> String { String(cString: curl_easy_strerror(code)) }
}
