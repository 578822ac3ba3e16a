// Capture is built on the session model and the desktop probes, whose types (`CaptureError`,
// `ScreenArea`, `KeyChord`, `SourceListing`…) are part of this module's own API: whoever
// imports ReplayCapture sees them too.
@_exported public import ReplayCaptureModel
@_exported public import ReplayDesktop
