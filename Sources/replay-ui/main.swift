// replay-ui: OpenReplayKit's dialogs on the person's desktop (see DialogService).
import Foundation

exit(DialogService().run())
