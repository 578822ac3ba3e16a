import FoundationEssentials
import ReplaySystem
import ReplayIPC

/// A request to replayd that takes a while (starting a broadcast, copying a movie out), sent on
/// a connection of its own from a thread of its own, so that neither the windows nor the
/// agent's stream of questions wait for it. The answer comes back on the main loop.
enum DaemonRequest {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Sends `request` and hands `done` the first reply that is not an event of something else
    /// (`isReply` says which), or why there is none.
    static func send(_ request: ClientRequest, to socket: String, isReply: @escaping @Sendable (DaemonEvent) -> Bool,
                     done: @escaping @Sendable (Result<DaemonEvent, Failure>) -> Void) {
        Threads.detach {
            let result: Result<DaemonEvent, Failure>
            do {
                let channel = try connect(socket)
                defer { channel.close() }
                try channel.send(request)
                result = .success(try reply(on: channel, isReply: isReply))
            } catch let failure as Failure {
                result = .failure(failure)
            } catch {
                result = .failure(Failure(description: "\(error)"))
            }
            MainLoop.post { done(result) }
        }
    }

    /// Copies recording `id` (its span `from`–`to`, when given) into the file at `path`,
    /// telling `progress` the fraction copied as it goes.
    static func export(_ id: String, from: Double? = nil, to: Double? = nil, into path: String, socket: String,
                       progress: @escaping @Sendable (Double) -> Void, done: @escaping @Sendable (Failure?) -> Void) {
        Threads.detach {
            let failure: Failure?
            do {
                let channel = try connect(socket)
                defer { channel.close() }
                // A daemon from before trimmed exports would send the whole movie for a span.
                if from != nil || to != nil, channel.welcome?.capabilities.contains(.trimmedExport) != true {
                    throw Failure(description: "this replayd cannot cut a recording (it predates trimmed exports); save it whole")
                }
                try channel.send(ClientRequest.exportRecording(id: id, container: .mp4, from: from, to: to))
                guard case .exportBegin(let size) = try reply(on: channel, isReply: { if case .exportBegin = $0 { true } else { false } }) else {
                    throw Failure(description: "replayd did not send the movie")
                }
                guard let file = try? OutputFile(creating: path, mode: 0o600) else { throw Failure(description: "cannot write \(path)") }
                defer { file.close() }
                var written: Int64 = 0
                while true {
                    guard let (event, body) = try channel.receive(DaemonEvent.self) else { throw Failure(description: "replayd closed the connection") }
                    switch event {
                    case .exportChunk:
                        try file.write(body)
                        written += Int64(body.count)
                        let fraction = size > 0 ? Double(written) / Double(size) : 0
                        MainLoop.post { progress(fraction) }
                    case .exportEnd:
                        try file.synchronize()
                        return MainLoop.post { done(nil) }
                    case .error(_, let message): throw Failure(description: message)
                    default: continue
                    }
                }
            } catch let error as Failure {
                failure = error
            } catch {
                failure = Failure(description: "\(error)")
            }
            try? FileManager.default.removeItem(atPath: path)
            MainLoop.post { done(failure) }
        }
    }

    private static func connect(_ socket: String) throws -> MessageChannel {
        do {
            return try MessageChannel.connect(path: socket, client: "replay-ui")
        } catch {
            throw Failure(description: "cannot reach replayd at \(socket): \(error)")
        }
    }

    private static func reply(on channel: MessageChannel, isReply: (DaemonEvent) -> Bool) throws -> DaemonEvent {
        while let (event, _) = try channel.receive(DaemonEvent.self) {
            if case .error(_, let message) = event { throw Failure(description: message) }
            if isReply(event) { return event }
        }
        throw Failure(description: "replayd closed the connection")
    }
}
