/// The video bitrate a receiver's congestion feedback allows: the loss-based half of Google
/// Congestion Control (draft-ietf-rmcat-gcc-02, section 6), fed once a second with the
/// fraction of packets lost that the receiver's RTCP receiver reports give (through
/// webrtcbin's statistics).
///
/// - loss over 10 %: the rate falls to rate × (1 − loss / 2);
/// - loss under 2 %: the rate grows by 8 % a report, up to `maximum`;
/// - in between: held.
///
/// GStreamer 1.22 in Debian has no delay-based estimator (the `rtpgccbwe` element is in the
/// Rust plugins, not packaged), so delay is not used beyond what loss shows.
package struct BitrateController: Sendable, Equatable {
    package let minimum: Int
    package let maximum: Int
    package private(set) var kbps: Int

    package init(start: Int, minimum: Int, maximum: Int) {
        self.minimum = minimum
        self.maximum = max(minimum, maximum)
        kbps = min(max(start, minimum), self.maximum)
    }

    /// One receiver report's worth: `fractionLost` (0...1) since the previous report.
    @discardableResult
    package mutating func update(fractionLost: Double) -> Int {
        let loss = min(max(fractionLost.isFinite ? fractionLost : 0, 0), 1)
        if loss > 0.10 {
            kbps = Int(Double(kbps) * (1 - 0.5 * loss))
        } else if loss < 0.02 {
            kbps = max(kbps + 1, Int((Double(kbps) * 1.08).rounded()))
        }
        kbps = min(max(kbps, minimum), maximum)
        return kbps
    }
}
