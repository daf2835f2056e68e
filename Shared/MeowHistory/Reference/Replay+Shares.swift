import MeowWire

/// Shares, account switches and the settle at the end of a run.
extension Replay {
    mutating func shareCreate(_ entry: HistoryEntry) {
        guard let root = entry.params["uuid"]?.stringValue,
              let zoneName = entry.outcome.result?["zoneName"]?.stringValue ?? entry.params["zoneName"]?.stringValue else { return }
        let owner = devices[entry.actor]?.user ?? entry.user ?? entry.actor
        let zone = ZoneRef(owner: owner, zoneName: zoneName)
        var share = ShareModel()
        for participant in entry.params["participants"]?.arrayValue ?? [] {
            guard let user = participant["user"]?.stringValue else { continue }
            share.participants[user] = .init(permission: participant["permission"]?.stringValue ?? "readOnly", acceptance: "pending")
        }
        // Sharing first sends the device's pending changes and fetches, so the graph moves as
        // the device then holds it.
        send(entry.actor, at: entry.index, carrying: .all)
        fetch(entry.actor, at: entry.index)
        state.shares[zone] = share
        shareRoots[zone] = root
        // Rule: a share covers the object and its whole graph (every object reachable through
        // relationships, both ways), which moves into the share's zone.
        for uuid in graph(of: root, in: .privateZone(of: owner)) {
            objectZone[uuid] = zone
            cloud[uuid]?.zone = zone
            for name in devices.keys {
                devices[name]?.pending[uuid]?.zone = zone
                devices[name]?.view[uuid]?.zone = zone
            }
        }
    }

    /// The root and every object of `zone` connected to it by relationships, either way.
    func graph(of root: String, in zone: ZoneRef) -> Set<String> {
        var graph: Set<String> = [root]
        var grew = true
        while grew {
            grew = false
            for (uuid, targets) in relations {
                let linked = Set(targets.values)
                let candidates = graph.contains(uuid) ? linked.subtracting(graph) : (linked.isDisjoint(with: graph) ? [] : [uuid])
                for candidate in candidates where objectZone[candidate] == zone {
                    graph.insert(candidate)
                    grew = true
                }
            }
        }
        return graph
    }

    mutating func shareChange(_ entry: HistoryEntry) {
        let user = devices[entry.actor]?.user ?? entry.user ?? entry.actor
        guard let zoneName = entry.params["zoneName"]?.stringValue else { return }
        let owner = entry.params["owner"]?.stringValue
        let zone = owner.map { ZoneRef(owner: $0, zoneName: zoneName) }
            ?? (state.shares[ZoneRef(owner: user, zoneName: zoneName)] != nil ? ZoneRef(owner: user, zoneName: zoneName)
                : state.shares.keys.sorted().first { $0.zoneName == zoneName })
        guard let zone else { return }
        var share = state.shares[zone] ?? ShareModel()
        switch entry.op {
        case HistoryOp.shareAccept:
            share.participants[user, default: .init(permission: "readOnly", acceptance: "pending")].acceptance = "accepted"
        case HistoryOp.shareLeave:
            share.participants[user]?.acceptance = "removed"
        case HistoryOp.shareStop:
            share.active = false
        case HistoryOp.sharePermission:
            guard let member = entry.params["user"]?.stringValue else { return }
            let permission = entry.params["permission"]?.stringValue ?? "readOnly"
            share.participants[member, default: .init(permission: permission, acceptance: "pending")].permission = permission
        case HistoryOp.shareRemove:
            guard let member = entry.params["user"]?.stringValue else { return }
            share.participants[member]?.acceptance = "removed"
        default: return
        }
        state.shares[zone] = share
        // Leaving answers with a fetch: the zone and its queued changes leave the device at once.
        if entry.op == HistoryOp.shareLeave { fetch(entry.actor, at: entry.index) }
    }

    mutating func discardAll(_ name: String, at index: Int, reason: String) {
        guard var device = devices[name] else { return }
        for pending in device.pending.values {
            for entry in pending.writes { state.wholeFates[entry] = .discarded(at: index, reason: reason) }
        }
        device.pending = [:]
        device.queue = []
        device.view = [:]
        device.base = [:]
        device.baseZone = [:]
        devices[name] = device
    }

    /// A settle recorded as one entry: every device sends, then every device fetches, twice
    /// (in device-name order), which is as quiet as the rules can make it.
    mutating func settle(at index: Int) {
        state.assumptions.append("settle #\(index) was replayed as two rounds of every device sending, then every device fetching, in device-name order.")
        for _ in 0..<2 {
            for name in devices.keys.sorted() { send(name, at: index, carrying: .all) }
            for name in devices.keys.sorted() { fetch(name, at: index) }
        }
    }
}
