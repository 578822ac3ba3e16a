/// The size an extension wants pictures in: as captured, or scaled down to fit a box
/// (Twilio's 886 and 1280 are common), keeping the aspect ratio, in even sizes for 4:2:0.
///
/// Only the size: pictures keep their `PictureFormat` (I420, matrix, range) when scaled.
public enum VideoFormatRequest: Sendable, Equatable {
    /// As captured (an odd edge dropped).
    case native
    /// The longer side at most `maxDimension` pixels; never scaled up.
    case fit(maxDimension: Int)

    /// The output size for a `width` x `height` input.
    public func size(forWidth width: Int, height: Int) -> (width: Int, height: Int) {
        guard case .fit(let box) = self, max(width, height) > box, box >= 2 else { return (width & ~1, height & ~1) }
        let scale = Double(box) / Double(max(width, height))
        func even(_ value: Double) -> Int { max(2, Int(value.rounded()) & ~1) }
        return (even(Double(width) * scale), even(Double(height) * scale))
    }
}
