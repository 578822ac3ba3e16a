/// Tells a press of Allow by the person from one that only an accessibility call made.
///
/// GTK emits a button's `clicked` for a pointer release over it, for Enter or Space while it
/// has the focus (once the key is released, or a quarter second after it went down), and for
/// AT-SPI's `DoAction`, which any client of the accessibility bus may call (a quarter second
/// after). The pointer's and the key release's come with an input event, which the dialog sees
/// first (capture phase) and reports here; the others come with none, and do not allow. So a click counts only while the input event
/// that caused it is being handled: `witnessed` marks it, and the dialog calls `eventHandled`
/// once its main loop has moved on (an idle of high priority), before any bus message.
public struct PersonPress: Sendable, Equatable {
    /// What an input event was, as far as this cares.
    public enum Input: Sendable, Equatable {
        /// A pointer button released; `onAllow`: over the Allow button.
        case pointerRelease(onAllow: Bool)
        /// A key pressed or released; `activates`: Enter or Space, `allowFocused`: with Allow
        /// holding the focus.
        case key(activates: Bool, allowFocused: Bool)
        /// Anything else (motion, scroll).
        case other
    }

    private var pressing = false

    public init() {}

    /// An input event reached the dialog, before its widgets.
    public mutating func witnessed(_ input: Input) {
        switch input {
        case .pointerRelease(let onAllow): pressing = onAllow
        case .key(let activates, let allowFocused): pressing = activates && allowFocused
        case .other: pressing = false
        }
    }

    /// The event has been handled: a click that comes now came without one.
    public mutating func eventHandled() { pressing = false }

    /// Allow was clicked: true when the person's input did it. Counts once.
    public mutating func clicked() -> Bool {
        defer { pressing = false }
        return pressing
    }
}
