package import CWebRTC

/// The video bitrate a receiver's congestion feedback allows: Google Congestion Control
/// (draft-ietf-rmcat-gcc-02) as far as webrtcbin's statistics feed it, once a second.
///
/// The loss-based half (section 6), from the fraction of packets lost in the receiver's RTCP
/// receiver reports:
/// - loss over 10 %: the rate falls to rate × (1 − loss / 2);
/// - loss under 2 %: the rate grows by 8 % a report, up to `maximum`;
/// - in between: held.
///
/// The receiver's own estimate (REMB, which an SFU such as Janus sends from its bitrate cap
/// and what it sees) bounds it (section 4: the sent rate is at most the receiver's): a lower
/// estimate takes the rate down at once, and a higher one lets it grow again at the
/// loss-based pace, not in one jump.
///
/// GStreamer 1.22 in Debian has no delay-based estimator of its own (the `rtpgccbwe` element
/// is in the Rust plugins, not packaged), so delay counts only through the receiver's estimate.
package struct BitrateController: Sendable, Equatable {
    package let minimum: Int
    package let maximum: Int
    package private(set) var kbps: Int
    /// The receiver's latest estimate, kbit/s; nil until one came.
    package private(set) var estimate: Int?

    package init(start: Int, minimum: Int, maximum: Int) {
        self.minimum = minimum
        self.maximum = max(minimum, maximum)
        kbps = min(max(start, minimum), self.maximum)
    }

    /// One second's feedback: `fractionLost` (0...1) since the previous receiver report, nil
    /// when none came; `estimate`, the receiver's latest REMB in kbit/s, nil when it sends none.
    @discardableResult
    package mutating func update(fractionLost: Double?, estimate: Int? = nil) -> Int {
        if let fractionLost {
            let loss = min(max(fractionLost.isFinite ? fractionLost : 0, 0), 1)
            if loss > 0.10 {
                kbps = Int(Double(kbps) * (1 - 0.5 * loss))
            } else if loss < 0.02 {
                kbps = max(kbps + 1, Int((Double(kbps) * 1.08).rounded()))
            }
        }
        if let estimate, estimate > 0 { self.estimate = estimate }
        if let limit = self.estimate { kbps = min(kbps, limit) }
        kbps = min(max(kbps, minimum), maximum)
        return kbps
    }
}

extension CWebRTCPeerStats {
    /// The loss in the latest receiver report for video; nil before the first.
    package var reportedLoss: Double? { have_report != 0 ? fraction_lost : nil }
    /// The receiver's latest REMB, kbit/s; nil before the first.
    package var estimateKbps: Int? { remb_bps > 0 ? Int(remb_bps / 1000) : nil }
}
