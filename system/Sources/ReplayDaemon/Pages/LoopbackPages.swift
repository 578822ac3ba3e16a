import FoundationEssentials
import ReplaySystem
import Hummingbird
import Logging
import NIOCore
import ReplayCaptureModel
import ReplayIPC
import ReplayLoopbackServer
public import ServiceLifecycle
import Synchronization

/// The pages replayd serves on loopback, out of every app's process: the consent page
/// (which app asks, what it will capture, Allow / Don't Allow) and the preview page (watch a
/// recording, Save or Delete it) and the broadcast picker. Every page opens with a one-time
/// link that only the person's own tools are given, exchanged for a cookie on first use (see
/// `PageLinks`); an unknown id answers exactly as a wrong, spent or expired link does. Only
/// requests to the loopback address and port, and forms from the page itself, get through
/// (`LoopbackRequestGuard`).
final class LoopbackPages: Sendable {
    private let consent: ConsentBroker
    private let previews: PreviewTokens
    private let store: RecordingStore
    private let logger: Logger
    /// The server, once the pages are first used, for `PagesService` to run; nil if replayd
    /// stopped before anyone used them.
    private let server = Completion<LoopbackServer.Prepared?>()
    /// `PagesService`'s run has ended (at once if the pages were never used).
    private let ended = Completion<Void>()
    private let stopping = Completion<Void>()
    /// Whether `run` took a server to serve: only then is there an end to wait for.
    private let serving = Mutex(false)
    private let backend = Mutex(WeakBackend())

    private struct WeakBackend {
        weak var value: (any PickerBackend)?
    }

    /// Connects the picker page to the daemon, once the daemon exists.
    func attach(_ daemon: any PickerBackend) {
        backend.withLock { $0.value = daemon }
    }

    private var daemon: (any PickerBackend)? { backend.withLock { $0.value } }

    /// The daemon's event loop, which the pages share with its clients' connections.
    private let eventLoop: any EventLoopGroup

    init(consent: ConsentBroker, previews: PreviewTokens, store: RecordingStore, eventLoop: any EventLoopGroup, logger: Logger) {
        self.consent = consent
        self.previews = previews
        self.store = store
        self.eventLoop = eventLoop
        self.logger = logger
    }

    /// Serves on 127.0.0.1:`port` (0 picks a free one) with at most `connections` open at
    /// once (their share of the descriptors); returns the base URL once listening. The server
    /// runs in `PagesService`'s task, which this awaits (10 s at most), holding no thread.
    func start(port: Int, connections: Int) async throws -> String {
        var pageLogger = logger
        pageLogger.logLevel = .warning
        do {
            let listening = LoopbackRequestGuard<BasicRequestContext>.Port()
            let prepared = LoopbackServer.prepare(router: router(port: listening), port: port, serverName: "replayd",
                                                  limits: LoopbackServer.Limits(connections: connections),
                                                  eventLoopGroup: eventLoop, logger: pageLogger)
            server.complete(prepared)
            let bound = try await prepared.port(within: 10)
            listening.set(bound)
            return "http://127.0.0.1:\(bound)"
        } catch {
            throw DaemonError(code: .failedToShowPreview, message: "cannot serve the loopback pages: \(error)")
        }
    }

    /// `PagesService`'s work: waits for the pages' first use, then serves them until the
    /// service group shuts down gracefully (which Hummingbird's own group hears), `stop`, or the
    /// task's cancellation; returns at once if they stop before anyone used them.
    func run() async {
        defer { ended.complete(()) }
        let server = await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await self.server.finished()
            } onCancel: {
                self.server.complete(nil)
            }
        } onGracefulShutdown: {
            self.server.complete(nil)
        }
        guard let server else { return }
        serving.withLock { $0 = true }
        await withDiscardingTaskGroup { group in
            group.addTask { [stopping, logger] in
                do { try await server.run() } catch { logger.warning("the loopback pages stopped: \(error)") }
                stopping.complete(())  // ended by itself: nothing left to stop
            }
            group.addTask { [stopping] in
                await stopping.finished()
                await server.stop()
            }
        }
    }

    func stop() {
        server.complete(nil)
        stopping.complete(())
    }

    /// Returns once the pages' server has closed its connections (at once when never started).
    func finished() async {
        guard serving.withLock({ $0 }) else { return }
        await ended.finished()
    }
}

/// The loopback pages as a service of the daemon's service group: started on their first
/// use, shut down gracefully with the group (or stopped by replayd's own stop), their
/// connections child tasks of this one.
public struct PagesService: Service, CustomStringConvertible {
    let daemon: Daemon

    public init(daemon: Daemon) { self.daemon = daemon }

    public var description: String { "replayd pages" }

    /// A port of the person's choosing (`--pages-port`) is bound at once, so that a clash
    /// ends replayd at its start, saying why, rather than failing a page later.
    public func run() async throws {
        let daemon = self.daemon
        async let served: Void = daemon.pages.run()
        if let port = daemon.configuration.pagesPort, port != 0 {
            do {
                _ = try await daemon.pagesBaseURL()
            } catch {
                daemon.logger.critical("cannot start: \(error)")
                daemon.pages.stop()
                await served
                throw error
            }
        }
        await served
    }
}

/// Where the pages listen. They start on first use (an app asks for consent, a preview or the
/// picker; the person asks for the status), so a daemon that only records never pays for a
/// web server (about 7 MB: Hummingbird and its event loops).
final class PagesAddress: Sendable {
    private struct State {
        var start: (@Sendable () async throws -> String)?
        var url: String?
        /// The first use's start, which every use meanwhile awaits too.
        var starting: Task<String, any Error>?
    }

    private let state = Mutex(State())

    /// How to start the pages; until this is called, replayd serves none.
    func serve(_ start: @escaping @Sendable () async throws -> String) {
        state.withLock { $0.start = start }
    }

    /// The pages' base URL, starting them if they are not yet; nil when replayd serves none.
    /// A start that fails is tried again by the next use.
    func url() async throws -> String? {
        enum Use {
            case known(String?)
            case awaiting(Task<String, any Error>)
        }
        let use = state.withLock { state -> Use in
            if let url = state.url { return .known(url) }
            guard let start = state.start else { return .known(nil) }
            if let starting = state.starting { return .awaiting(starting) }
            let starting = Task { try await start() }
            state.starting = starting
            return .awaiting(starting)
        }
        let starting: Task<String, any Error>
        switch use {
        case .known(let url): return url
        case .awaiting(let task): starting = task
        }
        do {
            let url = try await starting.value
            state.withLock { $0.url = url }
            return url
        } catch {
            state.withLock { state in if state.starting == starting { state.starting = nil } }
            throw error
        }
    }

    /// The base URL if the pages have started; never starts them.
    var started: String? { state.withLock { $0.url } }

    /// What the log says: the URL once started.
    var summary: String {
        state.withLock { $0.url ?? ($0.start == nil ? "off" : "on first use") }
    }
}

extension LoopbackPages {
    private func router(port: LoopbackRequestGuard<BasicRequestContext>.Port) -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: LoopbackRequestGuard(port: port))
        router.get("consent/:request") { [consent] request, context -> Response in
            let id = context.parameters.get("request") ?? ""
            if let session = Self.session(request), let prompt = consent.prompt(requestID: id, session: session) {
                return Self.html(PageTemplates.consent(prompt, lapse: consent.idleLimit))
            }
            guard let token = request.uri.queryParameters.get("token"),
                  let (prompt, session) = consent.openPage(requestID: id, token: String(token)) else { return Self.notFound() }
            return Self.html(PageTemplates.consent(prompt, lapse: consent.idleLimit), session: session, path: "/consent/\(id)")
        }
        router.post("consent/:request") { [consent] request, context -> Response in
            let id = context.parameters.get("request") ?? ""
            let form = try await Self.form(request)
            guard let session = Self.session(request), let prompt = consent.prompt(requestID: id, session: session),
                  let answer = form["answer"], answer == "allow" || answer == "deny" else { return Self.notFound() }
            _ = consent.answer(requestID: id, allow: answer == "allow", session: session)
            return Self.html(PageTemplates.answered(prompt, allowed: answer == "allow"))
        }
        router.get("preview/:recording") { [store, previews] request, context -> Response in
            let id = context.parameters.get("recording") ?? ""
            guard let info = store.info(id: id), let session = Self.openSession(request, links: previews.links, subject: id) else {
                return Self.notFound()
            }
            return Self.html(PageTemplates.preview(info), session: session.new, path: "/preview/\(id)")
        }
        router.get("preview/:recording/movie") { [store, previews] request, context -> Response in
            let id = context.parameters.get("recording") ?? ""
            guard let session = Self.session(request), previews.links.isSession(session, for: id),
                  let path = store.moviePath(id: id) else { return Self.notFound() }
            return try await Self.movie(path: path.path, id: id, request: request, context: context)
        }
        router.post("preview/:recording/delete") { [store, previews] request, context -> Response in
            let id = context.parameters.get("recording") ?? ""
            guard let session = Self.session(request), previews.links.isSession(session, for: id), store.delete(id: id) else {
                return Self.notFound()
            }
            previews.revoke(id)
            return Self.html(PageTemplates.deleted(id))
        }
        router.get("picker/:picker") { [self] request, context -> Response in
            let id = context.parameters.get("picker") ?? ""
            guard let daemon, let session = Self.openSession(request, links: daemon.pickers.links, subject: id),
                  let picker = daemon.pickers.picker(id, session: session.value) else { return Self.notFound() }
            let choices = daemon.catalog.list().filter { picker.preferredExtension == nil || $0.manifest.id == picker.preferredExtension }
            return Self.html(PageTemplates.picker(choices, picker: picker, pickerID: id), session: session.new, path: "/picker/\(id)")
        }
        router.post("picker/:picker") { [self] request, context -> Response in
            let id = context.parameters.get("picker") ?? ""
            guard let daemon, let session = Self.session(request), let picker = daemon.pickers.picker(id, session: session) else {
                return Self.notFound()
            }
            let form = try await Self.form(request)
            guard let extensionID = form["extension"], picker.preferredExtension == nil || picker.preferredExtension == extensionID else {
                return Self.html(PageTemplates.pickerResult(nil, error: "Choose a broadcast service."), status: .badRequest)
            }
            // The chosen service's settings only (each field is named `setup.SERVICE.KEY`).
            let prefix = "setup.\(extensionID)."
            var setup: [String: String] = [:]
            for (key, value) in form where key.hasPrefix(prefix) && !value.isEmpty { setup[String(key.dropFirst(prefix.count))] = value }
            // The scope is the app's request, shown on the page; nothing in the form changes it.
            switch await daemon.startPicked(id, extensionID: extensionID, setup: setup, microphone: form["microphone"] == "on") {
            case .success(let status):
                return Self.html(PageTemplates.pickerResult(status, error: nil, pickerID: id))
            case .failure(let error) where error.code == .busy:
                return Self.html(PageTemplates.pickerResult(nil, error: error.message), status: .conflict)
            case .failure(let error):
                return Self.html(PageTemplates.pickerResult(nil, error: error.message))
            }
        }
        router.post("picker/:picker/stop") { [self] request, context -> Response in
            let id = context.parameters.get("picker") ?? ""
            // Only the broadcast this picker started: never the person's own, nor another app's.
            guard let daemon, let session = Self.session(request), daemon.pickers.picker(id, session: session) != nil,
                  let final = await daemon.stopPicked(id) else {
                return Self.notFound()
            }
            return Self.html(PageTemplates.pickerResult(final, error: nil))
        }
        return router
    }

    /// Why the pages refuse a request to `host` from `origin` (see `LoopbackRequestGuard`), or nil.
    static func requestProblem(host: String?, origin: String?, readsOnly: Bool, port: Int) -> String? {
        LoopbackRequestCheck.problem(host: host, origin: origin, readsOnly: readsOnly, port: port)
    }

    /// The session a page is opened with: its cookie's, or one its one-time link in the URL is
    /// exchanged for now (`new`, to be set as the cookie).
    private static func openSession(_ request: Request, links: PageLinks, subject: String) -> (value: String, new: String?)? {
        if let session = session(request), links.isSession(session, for: subject) { return (session, nil) }
        guard let token = request.uri.queryParameters.get("token"), let session = links.redeem(String(token), for: subject) else {
            return nil
        }
        return (session, session)
    }

    /// The page's session from its cookie (each page's cookie is scoped to its own path).
    private static func session(_ request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.trimmingSpaces().split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0] == cookieName { return String(parts[1]) }
            }
        }
        return nil
    }

    private static let cookieName = "replay-page"

    /// The movie, whole or the byte range a player asks for (browsers seek with Range).
    private static func movie(path: String, id: String, request: Request, context: BasicRequestContext) async throws -> Response {
        let size = FileFacts.size(atPath: path).map { Int($0) } ?? 0
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
                String($0).replacing("+", with: " ").removingPercentEncoding() ?? ""
            }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }

    /// - Parameters:
    ///   - session: the session a one-time link was just exchanged for, set as the page's
    ///     cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's page sends
    ///     it), scoped to `path` (this page, its movie and its forms only).
    private static func html(_ page: String, status: HTTPResponse.Status = .ok, session: String? = nil, path: String = "/") -> Response {
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8",
            // The pages are never framed by another site, and keep their addresses to themselves.
            .contentSecurityPolicy: "default-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'",
            .cacheControl: "no-store",
            // Not no-referrer: with it, browsers send "Origin: null" on the page's own forms.
            .init("Referrer-Policy")!: "same-origin",
        ]
        if let session {
            headers[.setCookie] = "\(cookieName)=\(session); Path=\(path); HttpOnly; SameSite=Strict"
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page)))
    }

    /// Unknown page, wrong, spent or expired link: the same answer, so none tells which.
    private static func notFound() -> Response {
        Response(status: .notFound, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
                 body: .init(byteBuffer: ByteBuffer(string: """
                    404 Not Found: no such page, or its link was already used or has expired.
                    A link opens its page once, in the first browser that follows it; ask for a new one.

                    """)))
    }
}
