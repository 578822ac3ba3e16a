/// When a dialog's Allow may be pressed: once the dialog has been on screen and had the
/// keyboard focus for `delay`, without a break. A click meant for the app's window (the app
/// opens the dialog under the pointer, or draws over it) lands on a button that does nothing
/// yet; losing focus (another window raised over it) starts the wait again.
///
/// Times are seconds on a monotonic clock, given by the caller: the dialog's main loop in the
/// program, a test's numbers in unit tests.
public struct AllowArming: Sendable, Equatable {
    public static let standardDelay = 1.0

    public let delay: Double
    private var shownSince: Double?
    private var focusedSince: Double?

    public init(delay: Double = AllowArming.standardDelay) {
        self.delay = delay
    }

    /// The dialog was mapped (nil: hidden again).
    public mutating func shown(_ shown: Bool, at time: Double) {
        shownSince = shown ? (shownSince ?? time) : nil
    }

    /// The dialog gained or lost the keyboard focus.
    public mutating func focused(_ focused: Bool, at time: Double) {
        focusedSince = focused ? (focusedSince ?? time) : nil
    }

    /// Whether Allow may be pressed at `time`.
    public func isArmed(at time: Double) -> Bool {
        guard let since = armedFrom else { return false }
        return time >= since
    }

    /// When Allow becomes pressable if nothing changes, for a timer; nil while it cannot (hidden
    /// or not focused).
    public var armedFrom: Double? {
        guard let shownSince, let focusedSince else { return nil }
        return max(shownSince, focusedSince) + delay
    }
}
