public import Foundation
public import ReplaySystem

/// Ports on 127.0.0.1 for the servers the tests start.
public enum LoopbackPort {
    /// A TCP socket listening on 127.0.0.1 at a port the kernel chose, and that port.
    public static func listen(backlog: Int32 = 16) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError(call: "socket", errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && Glibc.listen(fd, backlog) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            let error = SystemError(call: "bind", errno: errno)
            close(fd)
            throw error
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A port on 127.0.0.1 that nothing listens on right now (for a server started next, or
    /// for "nothing there").
    public static func free() throws -> Int { try free(1)[0] }

    /// `count` different such ports: each is held until all are chosen, so the kernel cannot
    /// hand out the same one twice.
    public static func free(_ count: Int) throws -> [Int] {
        var held: [(fd: Int32, port: Int)] = []
        defer { for socket in held { close(socket.fd) } }
        for _ in 0..<count { held.append(try listen()) }
        return held.map(\.port)
    }
}

/// A real nginx with Debian's RTMP module on loopback: `rtmp://127.0.0.1:PORT/live` takes
/// streams, records each publish into `recordings/`, and `/stat` on the HTTP port reports
/// what is publishing. `stop()` and `start()` take it away and bring it back on the same
/// ports (the reconnect test).
public final class RTMPServer: @unchecked Sendable {
    // @unchecked: `process` is only replaced by the test that owns the server.
    public let directory: URL
    public private(set) var rtmpPort = 0
    public private(set) var httpPort = 0
    private var process: ChildProcess?

    public static let module = "/usr/lib/nginx/modules/ngx_rtmp_module.so"

    public var ingestURL: String { "rtmp://127.0.0.1:\(rtmpPort)/live" }
    public var recordings: URL { directory.appendingPathComponent("recordings") }

    public init(in parent: URL) throws {
        directory = parent.appendingPathComponent("nginx")
        for sub in ["recordings", "logs", "tmp"] {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        // Another process may take a free port before nginx binds it: then two fresh ones.
        var attempt = 0
        while true {
            let ports = try LoopbackPort.free(2)
            rtmpPort = ports[0]
            httpPort = ports[1]
            try writeConfig()
            do {
                try start()
                return
            } catch {
                attempt += 1
                guard attempt < 3, log.contains("Address already in use") else { throw error }
            }
        }
    }

    private func writeConfig() throws {
        let temp = directory.appendingPathComponent("tmp").path
        let config = """
            load_module \(Self.module);
            daemon off;
            master_process off;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/logs/error.log info;
            events { worker_connections 64; }
            rtmp {
                server {
                    listen 127.0.0.1:\(rtmpPort);
                    application live {
                        live on;
                        record all;
                        record_path \(recordings.path);
                        record_unique on;
                    }
                }
            }
            http {
                access_log off;
                client_body_temp_path \(temp)/body;
                proxy_temp_path \(temp)/proxy;
                fastcgi_temp_path \(temp)/fastcgi;
                uwsgi_temp_path \(temp)/uwsgi;
                scgi_temp_path \(temp)/scgi;
                server {
                    listen 127.0.0.1:\(httpPort);
                    location /stat { rtmp_stat all; }
                }
            }
            """
        try config.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
    }

    deinit { stop() }

    /// Starts nginx and waits until it accepts RTMP connections.
    public func start() throws {
        process = try ChildProcess(
            path: FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") ? "/usr/sbin/nginx" : Command.which("nginx"),
            arguments: ["-p", directory.path, "-c", directory.appendingPathComponent("nginx.conf").path,
                        "-e", directory.appendingPathComponent("logs/error.log").path],
            environment: ProcessInfo.processInfo.environment, stdout: .null, stderr: .null)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? stat()) != nil { return }
            guard process?.isRunning == true else { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw Failure(description: "nginx did not start; its log:\n\(log)")
    }

    /// Kills nginx: every publisher's connection drops at once, as when a server dies.
    public func stop() {
        process?.signal(SIGKILL)
        _ = process?.wait()
        process = nil
    }

    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? ""
    }

    /// The `/stat` page (XML).
    public func stat() throws -> String {
        let result = try Command.run(Command.which("curl"), ["-s", "--max-time", "2", "http://127.0.0.1:\(httpPort)/stat"])
        guard result.status == 0, result.stdout.contains("<rtmp>") else { throw Failure(description: "no /stat: \(result)") }
        return result.stdout
    }

    /// What `/stat` says about stream `name`, once it is publishing.
    public func publishing(_ name: String) throws -> Stream? {
        // Line breaks (CRLF) fall between elements; without them the XML is easy to scan.
        let xml = try stat().filter { $0 != "\r" && $0 != "\n" && $0 != "\r\n" }
        guard let start = xml.range(of: "<stream><name>\(name)</name>") else { return nil }
        let end = xml.range(of: "</stream>", range: start.upperBound..<xml.endIndex)?.lowerBound ?? xml.endIndex
        let body = String(xml[start.upperBound..<end])
        func field(_ tag: String, in text: String) -> String? {
            guard let open = text.range(of: "<\(tag)>"), let close = text.range(of: "</\(tag)>", range: open.upperBound..<text.endIndex)
            else { return nil }
            return String(text[open.upperBound..<close.lowerBound])
        }
        guard body.contains("<publishing/>") else { return nil }
        let video = field("video", in: body) ?? "", audio = field("audio", in: body) ?? ""
        return Stream(videoCodec: field("codec", in: video), width: field("width", in: video).flatMap(Int.init),
                      height: field("height", in: video).flatMap(Int.init), audioCodec: field("codec", in: audio),
                      bytesIn: field("bytes_in", in: body).flatMap(Int.init) ?? 0)
    }

    public struct Stream: Sendable, Equatable {
        public let videoCodec: String?
        public let width: Int?
        public let height: Int?
        public let audioCodec: String?
        public let bytesIn: Int
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }
}

/// An SRT listener on loopback: ffmpeg receiving MPEG-TS and copying it into a file, which
/// it closes when the caller hangs up.
public final class SRTListener: @unchecked Sendable {
    public let port: Int
    public let output: URL
    public let command: RunningCommand

    public var url: String { "srt://127.0.0.1:\(port)" }

    /// - Parameter passphrase: an encrypted listener: only a caller with the same passphrase connects.
    public init(output: URL, passphrase: String? = nil) throws {
        port = try LoopbackPort.free()
        self.output = output
        let encryption = passphrase.map { "&passphrase=\($0)" } ?? ""
        command = try Command.start(Command.which("ffmpeg"), [
            "-hide_banner", "-loglevel", "warning", "-y", "-i", "srt://127.0.0.1:\(port)?mode=listener&listen_timeout=60000000\(encryption)",
            "-c", "copy", "-f", "mpegts", output.path,
        ])
    }

    /// Waits for ffmpeg to end after the caller hung up; returns its result.
    public func finish(timeout: Double = 20) -> CommandResult { command.finish(timeout: timeout) }
}
