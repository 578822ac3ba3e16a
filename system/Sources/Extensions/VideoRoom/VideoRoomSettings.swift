import FoundationEssentials
import ReplayWebRTC

/// What the person set up (see videoroom.json), checked before anything starts: the Janus
/// server and room to join, as whom, and the video keys every WebRTC extension shares.
@dynamicMemberLookup
struct VideoRoomSettings: Sendable {
    typealias Invalid = WebRTCVideoSetup.Invalid

    /// The Janus HTTP API's address, e.g. http://janus.example.com:8088/janus.
    var server: URL
    /// The room's id: a number, or a string on a server that names rooms so.
    var room: RoomID
    var display: String
    /// The room's pin, and a token from its allowed list: secrets, only in request bodies.
    var pin: String?
    var token: String?
    /// How long to keep trying after the server went away before the broadcast ends.
    var reconnectTimeout = 60.0
    var video: WebRTCVideoSetup

    enum RoomID: Sendable, Equatable, CustomStringConvertible {
        case number(Int64)
        case name(String)

        var json: JSON {
            switch self {
            case .number(let number): .integer(number)
            case .name(let name): .string(name)
            }
        }

        var description: String {
            switch self {
            case .number(let number): String(number)
            case .name(let name): name
            }
        }
    }

    subscript<Value>(dynamicMember keyPath: KeyPath<WebRTCVideoSetup, Value>) -> Value { video[keyPath: keyPath] }

    init(setup: [String: String]) throws {
        let value = { (key: String) in WebRTCVideoSetup.value(key, in: setup) }
        guard let text = value("url") else { throw Invalid("url is required: the Janus server's HTTP API, e.g. http://127.0.0.1:8088/janus") }
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
            throw Invalid("url must be the Janus server's http:// or https:// address, not \(text)")
        }
        guard url.user == nil, url.password == nil, url.query == nil else {
            throw Invalid("url must not carry credentials: give the room's pin or token in their own (secret) settings")
        }
        server = url.path.isEmpty || url.path == "/" ? url.appendingPathComponent("janus") : url
        guard let roomText = value("room") else { throw Invalid("room is required: the VideoRoom room's id") }
        room = Int64(roomText).map(RoomID.number) ?? .name(roomText)
        display = value("display") ?? "Screen"
        guard display.count <= 100, !display.contains(where: \.isNewline) else {
            throw Invalid("display must be one line of at most 100 characters")
        }
        pin = value("pin")
        token = value("token")
        if let text = value("reconnect-timeout") {
            guard let seconds = Double(text), (1...3600).contains(seconds) else {
                throw Invalid("reconnect-timeout must be 1 to 3600 seconds, not \(text)")
            }
            reconnectTimeout = seconds
        }
        video = try WebRTCVideoSetup(setup: setup)
    }

    /// The body of the publisher's join, with the room's pin and token.
    var joinRequest: [String: JSON] {
        var body: [String: JSON] = ["request": "join", "ptype": "publisher", "room": room.json, "display": .string(display)]
        if let pin { body["pin"] = .string(pin) }
        if let token { body["token"] = .string(token) }
        return body
    }
}
