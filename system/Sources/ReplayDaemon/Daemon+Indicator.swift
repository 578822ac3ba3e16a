import FoundationEssentials
import Logging
import ReplayCaptureModel
import ReplayIPC
import ReplaySystem
import Synchronization

/// What the person is shown of pauses, of the indicator, and of saved clips.
extension Daemon {
    /// The running recordings (and clip buffers) that are paused now.
    var pausedRecordings: [String] {
        let sessions = state.withLock { Array($0.sessions.values) }
        return sessions.filter { $0.phase == .paused }.map(\.id).sorted()
    }

    /// The warning a recording that should be announced carries when nobody is told: the
    /// person learns it from the command they ran (not when they chose `--no-notify`, there or here).
    var unannouncedWarning: String? {
        guard configuration.notifications else { return nil }
        let reach = indicator.reach
        guard reach.kind == .none else { return nil }
        return IndicatorStatus.nobodyIsTold + (reach.reason.map { " (\($0))" } ?? "")
    }

    /// A fresh one-time link to recording `id`'s preview page, on the pages at `base`.
    func previewLink(for id: String, base: String) -> String {
        "\(base)/preview/\(id)?token=\(previews.token(for: id))"
    }

    /// An action that opens recording `id`'s preview page in the person's browser, made when
    /// it is chosen (a link is good once). Nil where the daemon cannot: a system daemon runs as
    /// its own user, away from the person's desktop and browser; `--no-pages` serves no page.
    func openPreviewAction(for id: String) -> IndicatedNotice.Action? {
        guard configuration.mode == .user, configuration.pagesPort != nil else { return nil }
        return IndicatedNotice.Action(label: "Open preview") { [self] in
            // The pages may start first: awaited in a task of its own, not on the notifications' queue.
            Task {
                do {
                    guard let base = try await pagesBaseURL() else { return }
                    // The link goes through a private redirect file, never a command line.
                    let browser = try PageOpener.open(previewLink(for: id, base: base))
                    browser.onExit { _ in }
                    logger.info("opened a clip's preview from the desktop's notification", metadata: ["recording": "\(id)"])
                } catch {
                    logger.warning("cannot open the clip's preview: \(error)", metadata: ["recording": "\(id)"])
                }
            }
        }
    }
}
