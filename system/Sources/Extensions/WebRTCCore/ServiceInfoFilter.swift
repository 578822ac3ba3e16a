/// Which service-info updates go to the host: one that changed something, and every tenth
/// call one anyway (so a host that joined late hears the state), never the same again and
/// again once a second.
package struct ServiceInfoFilter: Sendable {
    private var last: [String: String] = [:]
    private var calls = 0

    package init() {}

    /// Whether `info` should be sent now; if so, it is remembered as the last one sent.
    package mutating func admits(_ info: [String: String]) -> Bool {
        calls += 1
        guard info != last || calls % 10 == 0 else { return false }
        last = info
        return true
    }
}
