public import Foundation
import ReplaySystem

/// Debian's Janus WebRTC server (package `janus`) with its VideoRoom plugin, run in the
/// foreground from a config folder of the test's own: only the HTTP transport, on a free
/// loopback port, and one room with a pin. Janus offers no loopback ICE candidates: media goes
/// over the machine's own address. Stopped (SIGKILL, as a crash) by `stop`, and by `deinit`.
public final class JanusServer: @unchecked Sendable {
    // @unchecked: `process` is only replaced by the test that owns the server.
    public let directory: URL
    public private(set) var port = 0
    public let room: Int64 = 1234
    public let pin = "pin-\(UInt32.random(in: 0...UInt32.max))"
    /// The room's bitrate cap, bit/s, which Janus sends each publisher as its estimate (REMB);
    /// a change takes effect at the next `start` (a publisher keeps the cap it joined with).
    public var roomBitrate: Int
    private var process: ChildProcess?
    /// Serves the participants' page and Janus's JavaScript client on loopback.
    private var pages: ChildProcess?
    private var pagesPort = 0

    public static let executable = "/usr/bin/janus"
    /// Debian's janus.js, and the WebRTC shim it expects as a global (`adapter`).
    public static let clientScripts = ["/usr/share/javascript/webrtc-adapter/adapter.js", "/usr/share/javascript/janus-gateway/janus.js"]

    /// The HTTP API's address, as the extension's `url` setting takes it.
    public var url: String { "http://127.0.0.1:\(port)/janus" }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(in parent: URL, roomBitrate: Int = 2_000_000) throws {
        self.roomBitrate = roomBitrate
        directory = parent.appendingPathComponent("janus")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Another process may take the free port before Janus binds it: then a fresh one.
        var attempt = 0
        while true {
            port = try LoopbackPort.free()
            do {
                try start()
                return
            } catch {
                attempt += 1
                guard attempt < 3 else { throw error }
            }
        }
    }

    deinit { close() }

    /// The config and page templates (Tests/ReplayTesting/Janus, shared with bench/call).
    static let templates = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Janus")

    /// A template with its `{{NAME}}`s filled in.
    static func filled(_ name: String, _ values: [String: String]) throws -> String {
        var text = try String(contentsOf: templates.appendingPathComponent(name), encoding: .utf8)
        for (key, value) in values { text = text.replacingOccurrences(of: "{{\(key)}}", with: value) }
        return text
    }

    private func writeConfig() throws {
        let values = ["CONFIGS": directory.path, "PORT": String(port), "ROOM": String(room), "PIN": pin, "BITRATE": String(roomBitrate)]
        for name in ["janus.jcfg", "janus.transport.http.jcfg", "janus.plugin.videoroom.jcfg"] {
            try Self.filled(name, values).write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
    }

    /// Starts Janus and waits until its HTTP API answers.
    public func start() throws {
        try writeConfig()
        let log = open(directory.appendingPathComponent("janus.log").path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        defer { Glibc.close(log) }
        process = try ChildProcess(path: Self.executable,
                                   arguments: ["-F", directory.path, "-C", directory.appendingPathComponent("janus.jcfg").path],
                                   environment: ProcessInfo.processInfo.environment, stdout: .descriptor(log), stderr: .descriptor(log))
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if let info = try? Command.run(Command.which("curl"), ["-s", "--max-time", "1", url + "/info"]), info.stdout.contains("server_info") {
                return
            }
            guard process?.isRunning == true else { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        stop()
        throw Failure(description: "Janus did not start; its log:\n\(self.log.suffix(3000))")
    }

    /// Kills Janus: every session and peer is gone at once, as when a server dies.
    public func stop() {
        process?.signal(SIGKILL)
        _ = process?.wait()
        process = nil
    }

    /// Stops Janus and the pages' server.
    public func close() {
        stop()
        pages?.signal(SIGKILL)
        _ = pages?.wait()
        pages = nil
    }

    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("janus.log"), encoding: .utf8)) ?? ""
    }

    /// Serves a participant's page (Janus/participant.html, from a folder beside the config,
    /// over HTTP on loopback) and returns its address: it joins the room (as a participant that
    /// does not publish), subscribes to the first publisher named `display`, plays it, and keeps
    /// in `window.call` what a test reads. After the server went away it joins again, as a
    /// call's page does.
    public func participantPage(display: String) throws -> String {
        let folder = directory.appendingPathComponent("pages")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for script in Self.clientScripts {
            let copy = folder.appendingPathComponent((script as NSString).lastPathComponent)
            try? FileManager.default.removeItem(at: copy)
            try FileManager.default.copyItem(atPath: script, toPath: copy.path)
        }
        let page = try Self.filled("participant.html", ["SERVER": Self.json(url), "ROOM": String(room), "PIN": Self.json(pin),
                                                        "DISPLAY": Self.json(display)])
        try page.write(to: folder.appendingPathComponent("participant.html"), atomically: true, encoding: .utf8)
        if pages == nil {
            pagesPort = try LoopbackPort.free()
            pages = try ChildProcess(path: Command.which("python3"),
                                     arguments: ["-m", "http.server", String(pagesPort), "--bind", "127.0.0.1", "--directory", folder.path],
                                     environment: ProcessInfo.processInfo.environment, stdout: .null, stderr: .null)
            let address = "http://127.0.0.1:\(pagesPort)/participant.html"
            guard poll(timeout: 10, { (try? Command.run(Command.which("curl"), ["-sf", "--max-time", "1", "-o", "/dev/null", address]))?.status == 0 ? true : nil }) != nil
            else { throw Failure(description: "the pages' server did not start") }
        }
        return "http://127.0.0.1:\(pagesPort)/participant.html"
    }

    private static func json(_ string: String) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: [string]))?.dropFirst().dropLast() ?? Data(), as: UTF8.self)
    }
}
