import ReplayCaptureModel
import Synchronization

/// Links to the preview page of a recording. A link is handed to the person (the CLI, a
/// consent agent) and never to an app, so an app that knows a recording's id still cannot
/// watch, save or delete it. Each request for a preview gets a fresh link that works once,
/// within 5 minutes; the browser that opens it keeps the page for 30 minutes.
final class PreviewTokens: Sendable {
    static let lifetimes = PageLinks.Lifetimes(link: .seconds(300), session: .seconds(1800))

    let links: PageLinks

    init(links: PageLinks = PageLinks(lifetimes: PreviewTokens.lifetimes.capped())) {
        self.links = links
    }

    /// A fresh one-time link token for the recording's page.
    func token(for recordingID: String) -> String {
        links.issue(for: recordingID)
    }

    func revoke(_ recordingID: String) {
        links.revoke(recordingID)
    }
}
