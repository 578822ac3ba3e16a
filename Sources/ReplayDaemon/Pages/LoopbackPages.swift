import Foundation
import Hummingbird
import Logging
import ReplayIPC
import ReplayLoopbackServer
import Synchronization

/// The pages replayd serves on loopback, out of every app's process: the consent page
/// (which app asks, what it will capture, Allow / Don't Allow) and the preview page (watch a
/// recording, Save or Delete it). Every page needs a token that only the person's own
/// tools are given, and an unknown id answers exactly as a wrong token does.
final class LoopbackPages: Sendable {
    private let consent: ConsentBroker
    private let previews: PreviewTokens
    private let store: RecordingStore
    private let logger: Logger
    private let task = Mutex<Task<Void, any Error>?>(nil)
    private let backend = Mutex(WeakBackend())

    private struct WeakBackend {
        weak var value: (any PickerBackend)?
    }

    /// Connects the picker page to the daemon, once the daemon exists.
    func attach(_ daemon: any PickerBackend) {
        backend.withLock { $0.value = daemon }
    }

    private var daemon: (any PickerBackend)? { backend.withLock { $0.value } }

    init(consent: ConsentBroker, previews: PreviewTokens, store: RecordingStore, logger: Logger) {
        self.consent = consent
        self.previews = previews
        self.store = store
        self.logger = logger
    }

    /// Serves on 127.0.0.1:`port` (0 picks a free one); returns the base URL once listening.
    func start(port: Int) throws -> String {
        var pageLogger = logger
        pageLogger.logLevel = .warning
        do {
            let (bound, runner) = try LoopbackServer.start(router: router(), port: port, serverName: "replayd", logger: pageLogger)
            task.withLock { $0 = runner }
            return "http://127.0.0.1:\(bound)"
        } catch {
            throw DaemonError(code: .failedToShowPreview, message: "cannot serve the loopback pages: \(error)")
        }
    }

    func stop() {
        task.withLock { $0?.cancel() }
    }
}

/// What the picker page needs of the daemon.
protocol PickerBackend: AnyObject, Sendable {
    var catalog: ExtensionCatalog { get }
    var pickers: BroadcastPickers { get }
    func startBroadcast(_ request: BroadcastRequest, host: PeerIdentity?, hostChannel: ClientOutbox?) throws -> BroadcastStatus
    func broadcast(_ id: String?) -> BroadcastSession?
}

/// Where the pages listen. They start on first use (an app asks for consent, a preview or the
/// picker; the person asks for the status), so a daemon that only records never pays for a
/// web server (about 7 MB: Hummingbird and its event loops).
final class PagesAddress: Sendable {
    private let state = Mutex<(start: (@Sendable () throws -> String)?, url: String?)>((nil, nil))

    /// How to start the pages; until this is called, replayd serves none.
    func serve(_ start: @escaping @Sendable () throws -> String) {
        state.withLock { $0.start = start }
    }

    /// The pages' base URL, starting them if they are not yet; nil when replayd serves none.
    func url() throws -> String? {
        try state.withLock { state in
            if let url = state.url { return url }
            guard let start = state.start else { return nil }
            let url = try start()
            state.url = url
            return url
        }
    }

    /// What the log says: the URL once started.
    var summary: String {
        state.withLock { $0.url ?? ($0.start == nil ? "off" : "on first use") }
    }
}

extension LoopbackPages {
    private func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("consent/:request") { [consent] request, context -> Response in
            let id = context.parameters.get("request") ?? ""
            guard let prompt = consent.prompt(requestID: id, token: request.uri.queryParameters.get("token") ?? "") else {
                return Self.notFound()
            }
            return Self.html(PageTemplates.consent(prompt, token: request.uri.queryParameters.get("token") ?? "",
                                                   lapse: consent.idleLimit))
        }
        router.post("consent/:request") { [consent] request, context -> Response in
            let id = context.parameters.get("request") ?? ""
            let form = try await Self.form(request)
            guard let prompt = consent.prompt(requestID: id, token: form["token"] ?? ""),
                  let answer = form["answer"], answer == "allow" || answer == "deny" else { return Self.notFound() }
            _ = consent.answer(requestID: id, allow: answer == "allow", token: form["token"])
            return Self.html(PageTemplates.answered(prompt, allowed: answer == "allow"))
        }
        router.get("preview/:recording") { [store, previews] request, context -> Response in
            let id = context.parameters.get("recording") ?? ""
            let token = request.uri.queryParameters.get("token") ?? ""
            guard previews.isValid(token, for: id), let info = store.info(id: id) else { return Self.notFound() }
            return Self.html(PageTemplates.preview(info, token: token))
        }
        router.get("preview/:recording/movie") { [store, previews] request, context -> Response in
            let id = context.parameters.get("recording") ?? ""
            guard previews.isValid(request.uri.queryParameters.get("token") ?? "", for: id),
                  let path = store.moviePath(id: id) else { return Self.notFound() }
            return try await Self.movie(path: path.path, id: id, request: request, context: context)
        }
        router.post("preview/:recording/delete") { [store, previews] request, context -> Response in
            let id = context.parameters.get("recording") ?? ""
            let form = try await Self.form(request)
            guard previews.isValid(form["token"] ?? "", for: id), store.delete(id: id) else { return Self.notFound() }
            previews.revoke(id)
            return Self.html(PageTemplates.deleted(id))
        }
        router.get("picker/:token") { [self] _, context -> Response in
            guard let daemon, let token = context.parameters.get("token"), let picker = daemon.pickers.picker(token) else {
                return Self.notFound()
            }
            let choices = daemon.catalog.list().filter { picker.preferredExtension == nil || $0.manifest.id == picker.preferredExtension }
            return Self.html(PageTemplates.picker(choices, picker: picker, token: token))
        }
        router.post("picker/:token") { [self] request, context -> Response in
            guard let daemon, let token = context.parameters.get("token"), let picker = daemon.pickers.picker(token) else {
                return Self.notFound()
            }
            let form = try await Self.form(request)
            guard let id = form["extension"], picker.preferredExtension == nil || picker.preferredExtension == id else {
                return Self.html(PageTemplates.pickerResult(nil, error: "Choose a broadcast service."))
            }
            var setup: [String: String] = [:]
            for (key, value) in form where key.hasPrefix("setup.") && !value.isEmpty { setup[String(key.dropFirst(6))] = value }
            // The scope is the app's request, shown on the page; nothing in the form changes it.
            let broadcast = BroadcastRequest(extensionID: id, setup: setup, microphone: form["microphone"] == "on" || picker.microphone,
                                             scope: picker.scope)
            // Starting waits for the extension to be ready: off the server's threads.
            let outcome = await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    do {
                        continuation.resume(returning: Result<BroadcastStatus, any Error>.success(
                            try daemon.startBroadcast(broadcast, host: picker.hostPeer, hostChannel: picker.host)))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
            }
            switch outcome {
            case .success(let status): return Self.html(PageTemplates.pickerResult(status, error: nil, token: token))
            case .failure(let error):
                let message = (error as? ClientConnection.Refusal)?.message ?? "\(error)"
                return Self.html(PageTemplates.pickerResult(nil, error: message))
            }
        }
        router.post("picker/:token/stop") { [self] request, context -> Response in
            guard let daemon, let token = context.parameters.get("token"), daemon.pickers.picker(token) != nil else {
                return Self.notFound()
            }
            let form = try await Self.form(request)
            guard let id = form["broadcast"], let session = daemon.broadcast(id) else { return Self.notFound() }
            let final = await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    session.stop()
                    continuation.resume(returning: session.waitUntilFinished())
                }
            }
            return Self.html(PageTemplates.pickerResult(final, error: nil))
        }
        return router
    }

    /// The movie, whole or the byte range a player asks for (browsers seek with Range).
    private static func movie(path: String, id: String, request: Request, context: BasicRequestContext) async throws -> Response {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        guard size > 0 else { return notFound() }
        var headers: HTTPFields = [.contentType: "video/mp4", .acceptRanges: "bytes"]
        if request.uri.queryParameters.get("download") != nil {
            headers[.contentDisposition] = "attachment; filename=\"\(id).mp4\""
        }
        let fileIO = FileIO()
        if let range = request.headers[.range].flatMap({ byteRange($0, size: size) }) {
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
            headers[.contentLength] = "\(range.count)"
            let body = try await fileIO.loadFile(path: path, range: range, context: context)
            return Response(status: .partialContent, headers: headers, body: body)
        }
        headers[.contentLength] = "\(size)"
        return Response(status: .ok, headers: headers, body: try await fileIO.loadFile(path: path, context: context))
    }

    /// `bytes=START-END` or `bytes=START-`, clamped to the file; nil for anything else.
    static func byteRange(_ header: String, size: Int) -> ClosedRange<Int>? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let parts = header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Int(parts[0]), start < size else { return nil }
        let end = parts[1].isEmpty ? size - 1 : min(Int(parts[1]) ?? -1, size - 1)
        return start <= end ? start...end : nil
    }

    private static func form(_ request: Request) async throws -> [String: String] {
        var body = try await request.body.collect(upTo: 4096)
        let text = body.readString(length: body.readableBytes) ?? ""
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }

    private static func html(_ page: String) -> Response {
        Response(status: .ok, headers: [
            .contentType: "text/html; charset=utf-8",
            // The pages are never framed by another site, and keep their tokens to themselves.
            .contentSecurityPolicy: "default-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'",
            .cacheControl: "no-store",
        ], body: .init(byteBuffer: ByteBuffer(string: page)))
    }

    private static func notFound() -> Response {
        Response(status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(string: "Not found, or the link has expired.\n")))
    }
}
