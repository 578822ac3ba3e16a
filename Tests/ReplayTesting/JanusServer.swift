public import Foundation
import ReplaySystem

/// Debian's Janus WebRTC server (package `janus`) with its VideoRoom plugin, run in the
/// foreground from a config folder of the test's own: only the HTTP transport, on a free
/// loopback port, and one room with a pin. ICE uses loopback only. Stopped (SIGKILL, as a
/// crash) by `stop`, and by `deinit`.
public final class JanusServer: @unchecked Sendable {
    // @unchecked: `process` is only replaced by the test that owns the server.
    public let directory: URL
    public private(set) var port = 0
    public let room: Int64 = 1234
    public let pin = "pin-\(UInt32.random(in: 0...UInt32.max))"
    /// The room's bitrate cap, bit/s, which Janus sends each publisher as its estimate (REMB);
    /// a change takes effect at the next `start` (a publisher keeps the cap it joined with).
    public var roomBitrate: Int {
        didSet { try? writeConfig() }
    }
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
            try writeConfig()
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

    private func writeConfig() throws {
        let library = "/usr/lib/x86_64-linux-gnu/janus"
        let plugins = ["audiobridge", "echotest", "duktape", "lua", "nosip", "recordplay", "sip", "streaming", "textroom", "videocall",
                       "voicemail"].map { "libjanus_\($0).so" }.joined(separator: ",")
        let files = [
            "janus.jcfg": """
                general: {
                    configs_folder = "\(directory.path)"
                    plugins_folder = "\(library)/plugins"
                    transports_folder = "\(library)/transports"
                    events_folder = "\(library)/events"
                    loggers_folder = "\(library)/loggers"
                    debug_level = 4
                    log_to_stdout = true
                }
                media: { rtp_port_range = "20000-40000" }
                nat: { ice_enforce_list = "lo" }
                plugins: { disable = "\(plugins)" }
                transports: { disable = "libjanus_websockets.so,libjanus_pfunix.so,libjanus_mqtt.so,libjanus_nanomsg.so,libjanus_rabbitmq.so" }
                events: { broadcast = false }
                loggers: { disable = "libjanus_jsonlog.so" }
                """,
            "janus.transport.http.jcfg": """
                general: { base_path = "/janus", http = true, port = \(port), ip = "127.0.0.1", https = false }
                admin: { admin_http = false }
                """,
            "janus.plugin.videoroom.jcfg": """
                room-\(room): {
                    description = "The tests' call"
                    pin = "\(pin)"
                    publishers = 8
                    bitrate = \(roomBitrate)
                    fir_freq = 10
                    videocodec = "h264"
                    audiocodec = "opus"
                }
                """,
        ]
        for (name, text) in files {
            try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
    }

    /// Starts Janus and waits until its HTTP API answers.
    public func start() throws {
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

    /// Serves a participant's page (from a folder beside the config, over HTTP on loopback)
    /// and returns its address: it joins the room (as a participant that does not publish),
    /// subscribes to the first publisher named `display`, plays it, and keeps in `window.call`
    /// what a test reads. After the server went away it joins again, as a call's page does.
    public func participantPage(display: String) throws -> String {
        let folder = directory.appendingPathComponent("pages")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for script in Self.clientScripts {
            let copy = folder.appendingPathComponent((script as NSString).lastPathComponent)
            try? FileManager.default.removeItem(at: copy)
            try FileManager.default.copyItem(atPath: script, toPath: copy.path)
        }
        let scripts = Self.clientScripts.map { "<script src=\"\(($0 as NSString).lastPathComponent)\"></script>" }.joined(separator: "\n")
        let page = """
            <!doctype html>
            <html><head><meta charset="utf-8"><title>participant</title>
            \(scripts)
            </head><body><video autoplay muted playsinline></video>
            <script>
            const server = \(Self.json(url)), room = \(room), pin = \(Self.json(pin)), wanted = \(Self.json(display));
            const call = window.call = { joins: 0, publisherPresent: false, publisherSeen: false, publisherName: null,
                                         subscribed: false, tracksEnded: 0, errors: [], pc: null };
            const video = document.querySelector('video');
            // Given to the <video> with its first track: a media element with nothing to play
            // yet holds the page's load event.
            const stream = new MediaStream();
            function rejoin(why) {
              call.errors.push(String(why));
              call.subscribed = false; call.publisherPresent = false; call.pc = null;
              setTimeout(join, 1000);
            }
            function join() {
              const janus = new Janus({ server, error: rejoin, destroyed: () => {}, success: () => {
                janus.attach({ plugin: 'janus.plugin.videoroom', error: rejoin, success: room_handle => {
                  // A participant of its own that publishes nothing: it hears who publishes.
                  room_handle.send({ message: { request: 'join', ptype: 'publisher', room, pin, display: 'viewer' } });
                  call.joins++;
                  const watch = publishers => {
                    const found = (publishers || []).find(p => p.display === wanted);
                    if (found && !call.subscribed) subscribe(janus, found.id);
                  };
                  room_handle.onmessage = message => {
                    watch(message.publishers);
                    if (message.unpublished !== undefined || message.leaving !== undefined) poll(room_handle);
                  };
                  const poll = handle => handle.send({ message: { request: 'listparticipants', room }, success: reply => {
                    const present = (reply.participants || []).some(p => p.display === wanted && p.publisher);
                    call.publisherPresent = present;
                    if (present) call.publisherSeen = true;
                  } });
                  setInterval(() => poll(room_handle), 500);
                } });
              } });
            }
            function subscribe(janus, feed) {
              call.subscribed = true;
              janus.attach({ plugin: 'janus.plugin.videoroom', error: rejoin, success: handle => {
                handle.send({ message: { request: 'join', ptype: 'subscriber', room, pin, streams: [{ feed }] } });
                handle.onmessage = (message, jsep) => {
                  // Whose feed Janus gives this subscription.
                  const named = (message.streams || []).find(s => s.feed_display);
                  if (message.videoroom === 'attached' && named) call.publisherName = named.feed_display;
                  if (jsep) handle.createAnswer({ jsep, tracks: [{ type: 'data' }], media: { audioSend: false, videoSend: false },
                    success: answer => handle.send({ message: { request: 'start', room }, jsep: answer }),
                    error: rejoin });
                };
                handle.onremotetrack = (track, mid, on) => {
                  call.pc = handle.webrtcStuff.pc;
                  if (on) {
                    stream.getTracks().filter(t => t.kind === track.kind).forEach(t => stream.removeTrack(t));
                    stream.addTrack(track);
                    if (!video.srcObject) video.srcObject = stream;
                  }
                  else call.tracksEnded++;
                };
              } });
            }
            Janus.init({ debug: false, callback: join });
            </script></body></html>
            """
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
