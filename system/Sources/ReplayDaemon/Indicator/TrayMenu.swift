import ReplayDBus
import ReplayIPC

/// The tray icon's menu (com.canonical.dbusmenu's layout): for each capture, what it is (a
/// line that does nothing), Pause or Resume where it can be paused from here, and Stop;
/// captures apart by a separator. Items are numbered afresh with each layout's revision.
struct TrayMenu: Equatable {
    enum Action: Equatable {
        case pause, resume, stop
    }

    struct Item: Equatable {
        let id: Int32
        let label: String
        /// What pressing it does to which capture; nil: a line that only says.
        let action: (capture: String, action: Action)?
        var isSeparator = false

        static func == (a: Item, b: Item) -> Bool {
            a.id == b.id && a.label == b.label && a.isSeparator == b.isSeparator
                && a.action?.capture == b.action?.capture && a.action?.action == b.action?.action
        }
    }

    let items: [Item]

    /// - Parameter captures: each capture shown, and whether it can be paused from here.
    init(_ captures: [(capture: IndicatedCapture, pausable: Bool)]) {
        var items: [Item] = []
        var next: Int32 = 1
        func add(_ label: String, _ action: (String, Action)?, separator: Bool = false) {
            items.append(Item(id: next, label: label, action: action, isSeparator: separator))
            next += 1
        }
        for (index, (capture, pausable)) in captures.enumerated() {
            if index > 0 { add("", nil, separator: true) }
            add(VisibleText.of(capture.summary), nil)
            if pausable { add(capture.paused ? "Resume" : "Pause", (capture.id, capture.paused ? .resume : .pause)) }
            add("Stop", (capture.id, .stop))
        }
        self.items = items
    }

    func item(_ id: Int32) -> Item? { items.first { $0.id == id } }

    /// An item's properties as dbusmenu names them.
    func properties(of item: Item) -> [String: DBusValue] {
        if item.isSeparator { return ["type": .string("separator")] }
        return ["label": .string(item.label), "enabled": .bool(item.action != nil), "visible": .bool(true)]
    }

    /// GetLayout's `(ia{sv}av)`: the root (id 0) and its items, one level deep.
    func layout() -> DBusValue {
        let children = items.map { item in
            DBusValue.variant(.structure([.int32(item.id), .options(properties(of: item)), .array(element: "v", [])]))
        }
        return .structure([.int32(0), .options(["children-display": .string("submenu")]), .array(element: "v", children)])
    }
}
