import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Debian's headless Chromium, driven over the DevTools protocol so integration tests can open
/// a loopback page and click its buttons as a person would. `--remote-debugging-pipe` makes
/// Chromium read commands on fd 3 and write replies and events on fd 4, each a JSON object
/// ended by a NUL byte; both are one end of a socket pair, so no WebSocket client is needed.
public final class HeadlessBrowser: @unchecked Sendable {
    // @unchecked: `pid` changes only under `lock`; the rest is immutable or guards itself.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private let connection: Connection
    private let directory: String
    private let lock = NSLock()
    private var pid: pid_t?

    /// Starts Chromium (about 0.4 s here) with a fresh profile, its output to a log beside it.
    public init(executable: String = "/usr/bin/chromium") throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let log = directory + "/chromium.log"
        var ends: [Int32] = [-1, -1]
        // A socket, not a pipe: send(MSG_NOSIGNAL) cannot raise SIGPIPE in the tests if Chromium dies.
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw Failure(description: "socketpair: \(String(cString: strerror(errno)))")
        }
        // Chromium's end above fd 4, so that dup2 onto 3 and 4 never meets itself.
        let child = fcntl(ends[1], F_DUPFD_CLOEXEC, 10)
        close(ends[1])
        defer { close(child) }
        var patience = timeval(tv_sec: 10, tv_usec: 0)  // a wedged Chromium fails a send, not hangs it
        setsockopt(ends[0], SOL_SOCKET, SO_SNDTIMEO, &patience, socklen_t(MemoryLayout<timeval>.size))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_adddup2(&actions, child, 3)
        posix_spawn_file_actions_adddup2(&actions, child, 4)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own session (so one kill reaches every Chromium process), default signal handling.
        var signals = sigset_t()
        sigfillset(&signals)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        posix_spawnattr_setflags(&attributes, Int16(0x80 /* POSIX_SPAWN_SETSID */ | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let arguments = [
            executable, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
            "--user-data-dir=\(directory)", "--no-first-run", "--no-default-browser-check", "--mute-audio",
            // Quiet: no traffic of its own, and loopback pages never go through a proxy.
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
            "--disable-default-apps", "--disable-features=Translate,MediaRouter", "--password-store=basic",
            "--no-proxy-server",
            // Deterministic: a fixed viewport, and pages behind others keep their timers running.
            "--window-size=1280,800", "--force-device-scale-factor=1", "--hide-scrollbars",
            "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
            "--disable-renderer-backgrounding", "--disable-dev-shm-usage",
            // A page may listen to what it receives (Web Audio) without a click.
            "--autoplay-policy=no-user-gesture-required", "about:blank",
        ]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard status == 0 else {
            close(ends[0])
            try? FileManager.default.removeItem(atPath: directory)
            throw Failure(description: "cannot start \(executable): \(String(cString: strerror(status)))")
        }
        self.pid = pid
        connection = Connection(fd: ends[0], log: log)
        do {
            _ = try connection.call("Browser.getVersion", timeout: 30)  // answered once Chromium is up
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// Opens `url` in a new tab and waits for its load event.
    public func open(_ url: String, timeout: Double = 20) throws -> Page {
        let deadline = Date(timeIntervalSinceNow: timeout)
        func left() -> Double { max(0.1, deadline.timeIntervalSinceNow) }
        // A blank page first, and listen before navigating, so no load event can slip by unseen. Its
        // own window, because a tab behind another gets mouse events only after a 5 s stall.
        let target = try connection.call("Target.createTarget", ["url": "about:blank", "newWindow": true], timeout: left())
        let attached = try connection.call("Target.attachToTarget", ["targetId": target["targetId"] ?? "", "flatten": true],
                                           timeout: left())
        guard let session = attached["sessionId"] as? String else { throw Failure(description: "no session for \(url)") }
        let page = Page(browser: self, session: session)
        _ = try page.call("Page.enable", timeout: left())
        _ = try page.call("Page.setLifecycleEventsEnabled", ["enabled": true], timeout: left())
        let navigation = try page.call("Page.navigate", ["url": url], timeout: left())
        if let error = navigation["errorText"] as? String { throw Failure(description: "cannot open \(url): \(error)") }
        // The load of this navigation (its loaderId), not of the blank page before it.
        guard let loader = navigation["loaderId"] as? String else { return page }  // same-document: nothing to load
        let loaded = try connection.waitForEvent(until: deadline) { event in
            let params = event["params"] as? [String: Any]
            return event["sessionId"] as? String == session && event["method"] as? String == "Page.lifecycleEvent"
                && params?["name"] as? String == "load" && params?["loaderId"] as? String == loader
        }
        guard loaded else { throw Failure(description: "\(url) did not finish loading within \(timeout) s") }
        return page
    }

    /// Kills Chromium and all its helpers and removes its profile. Safe to call twice.
    public func stop() {
        let pid = lock.withLock { () -> pid_t? in defer { self.pid = nil }; return self.pid }
        guard let pid else { return }
        connection.stop()
        kill(-pid, SIGKILL)  // its process group: the browser, zygotes and renderers
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// One tab, attached with its own DevTools session.
    public final class Page: Sendable {
        private let browser: HeadlessBrowser
        private let session: String

        fileprivate init(browser: HeadlessBrowser, session: String) {
            self.browser = browser
            self.session = session
        }

        fileprivate func call(_ method: String, _ params: [String: Any] = [:], timeout: Double) throws -> [String: Any] {
            try browser.connection.call(method, params, session: session, timeout: timeout)
        }

        /// The value of `expression` (promises awaited), as JSON gives it: nil for null/undefined.
        public func evaluate(_ expression: String, timeout: Double = 20) throws -> Any? {
            do { return try value(of: expression, timeout: timeout) } catch let failure as Failure {
                throw Failure(description: "\(failure) (evaluating \(expression))")
            }
        }

        private func value(of expression: String, timeout: Double) throws -> Any? {
            let reply = try call("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true,
                                                      "userGesture": true], timeout: timeout)
            if let details = reply["exceptionDetails"] as? [String: Any] {
                let exception = details["exception"] as? [String: Any]
                throw Failure(description: exception?["description"] as? String ?? details["text"] as? String ?? "\(details)")
            }
            let value = (reply["result"] as? [String: Any])?["value"]
            return value is NSNull ? nil : value
        }

        /// Polls `expression` every 100 ms until it is truthy (in JavaScript's sense). Exceptions
        /// count as "not yet", so `document.querySelector('#late').textContent` is fine.
        public func waitUntil(_ expression: String, timeout: Double = 20) throws {
            let deadline = Date(timeIntervalSinceNow: timeout)
            let probe = "(async () => { const value = await (\n\(expression)\n); return [!!value, String(value)]; })()"
            var last = "nothing yet"
            while true {
                do {
                    let pair = try value(of: probe, timeout: max(0.1, deadline.timeIntervalSinceNow)) as? [Any]
                    if pair?.first as? Bool == true { return }
                    last = pair?.last as? String ?? "?"
                } catch let failure as Failure where browser.connection.isOpen {
                    last = failure.description
                }
                if Date() >= deadline { throw Failure(description: "\(expression) still not truthy after \(timeout) s; last: \(last)") }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }

        /// Clicks the centre of the element matching `selector` with real mouse events, so hit
        /// testing, focus and user activation are a person's; throws if it is missing or covered.
        public func click(_ selector: String) throws {
            let literal = String(decoding: try JSONEncoder().encode(selector), as: UTF8.self)
            let point = try evaluate("""
                (() => {
                  const element = document.querySelector(\(literal));
                  if (!element) throw new Error('nothing matches ' + \(literal));
                  element.scrollIntoView({block: 'center', inline: 'center'});
                  const box = element.getBoundingClientRect();
                  const x = box.left + box.width / 2, y = box.top + box.height / 2;
                  const hit = document.elementFromPoint(x, y);
                  if (!box.width || !box.height || !element.contains(hit))
                    throw new Error(\(literal) + ' is hidden or covered by ' + (hit ? hit.outerHTML.slice(0, 100) : 'nothing'));
                  return [x, y];
                })()
                """) as? [Any]
            guard let point, point.count == 2, let x = point[0] as? Double, let y = point[1] as? Double else {
                throw Failure(description: "no position for \(selector)")
            }
            for (type, button) in [("mouseMoved", "none"), ("mousePressed", "left"), ("mouseReleased", "left")] {
                _ = try call("Input.dispatchMouseEvent", ["type": type, "x": x, "y": y, "button": button, "clickCount": 1],
                             timeout: 20)
            }
        }

        /// What a person reads on the page: `document.body.innerText`.
        public func text() throws -> String {
            try evaluate("document.body ? document.body.innerText : ''") as? String ?? ""
        }

        /// A PNG of the viewport, for people debugging a failure.
        public func screenshot(to path: String) throws {
            let reply = try call("Page.captureScreenshot", ["format": "png"], timeout: 30)
            guard let base64 = reply["data"] as? String, let png = Data(base64Encoded: base64) else {
                throw Failure(description: "Page.captureScreenshot returned no image")
            }
            try png.write(to: URL(fileURLWithPath: path))
        }
    }
}

/// Our end of the socket pair. A reader thread files replies by id and keeps events; callers
/// wait on `condition` with a deadline, so nothing waits forever, and a hang-up wakes them all.
private final class Connection: @unchecked Sendable {
    // @unchecked: the mutable state is guarded by `condition`, sends by `sending`.
    private let fd: Int32
    private let log: String
    private let condition = NSCondition()
    private let sending = NSLock()
    private var nextID = 0
    private var replies: [Int: [String: Any]] = [:]
    private var abandoned: Set<Int> = []  // ids whose callers timed out: drop their late replies
    private var events: [[String: Any]] = []
    private var closed = false
    private var stopping = false

    init(fd: Int32, log: String) {
        self.fd = fd
        self.log = log
        let reader = Thread { [self] in readLoop() }
        reader.name = "chromium-devtools"
        reader.start()
    }

    deinit { close(fd) }  // only once the reader thread has let go too

    var isOpen: Bool { condition.withLock { !closed } }

    func stop() { condition.withLock { stopping = true } }

    func call(_ method: String, _ params: [String: Any] = [:], session: String? = nil, timeout: Double) throws -> [String: Any] {
        let id = condition.withLock { nextID += 1; return nextID }
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let session { message["sessionId"] = session }
        var data = try JSONSerialization.data(withJSONObject: message)
        data.append(0)
        let sent = sending.withLock {
            data.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let count = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { return false }
                    offset += count
                }
                return true
            }
        }
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while sent && replies[id] == nil && !closed && condition.wait(until: deadline) {}
        guard let reply = replies.removeValue(forKey: id) else {
            abandoned.insert(id)
            if closed || !sent { throw exited() }
            throw HeadlessBrowser.Failure(description: "\(method) got no answer within \(timeout) s")
        }
        if let error = reply["error"] as? [String: Any] {
            throw HeadlessBrowser.Failure(description: "\(method) failed: \(error["message"] as? String ?? "\(error)")")
        }
        return reply["result"] as? [String: Any] ?? [:]
    }

    /// Waits for (and consumes) an event that `matches`; false on timeout.
    func waitForEvent(until deadline: Date, _ matches: ([String: Any]) -> Bool) throws -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let index = events.firstIndex(where: matches) {
                events.remove(at: index)
                return true
            }
            if closed { throw exited() }
            if !condition.wait(until: deadline) { return false }
        }
    }

    private func readLoop() {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while !condition.withLock({ stopping }) {
            // poll with a timeout, so `stop()` is noticed even if Chromium stays silent.
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let status = poll(&ready, 1, 200)
            if status == 0 || (status < 0 && errno == EINTR) { continue }
            let count = status < 0 ? -1 : read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            let start = pending.count
            pending.append(contentsOf: chunk[0..<count])
            guard pending[start...].contains(0) else { continue }
            let messages = pending.split(separator: 0, omittingEmptySubsequences: false)
            pending = Array(messages.last ?? [])
            for message in messages.dropLast() {
                if let object = try? JSONSerialization.jsonObject(with: Data(message)) as? [String: Any] { deliver(object) }
            }
        }
        condition.withLock { closed = true; condition.broadcast() }
    }

    private func deliver(_ message: [String: Any]) {
        condition.withLock {
            if let id = message["id"] as? Int {
                if abandoned.remove(id) == nil { replies[id] = message }
            } else {
                events.append(message)
                if events.count > 1000 { events.removeFirst(events.count - 1000) }  // nobody asked for the old ones
            }
            condition.broadcast()
        }
    }

    private func exited() -> HeadlessBrowser.Failure {
        // Without the complaints about D-Bus, which there is none of here, whatever happened.
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
            .filter { !$0.contains(":ERROR:dbus/") }
        return HeadlessBrowser.Failure(
            description: "Chromium has exited; the end of \(log):\n\(lines.suffix(20).joined(separator: "\n"))")
    }
}
