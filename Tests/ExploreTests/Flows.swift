import MeowExplore

/// Flows the suite explores.
enum Flows {
    /// Three devices of two users: edits on one user's session from two devices, a share to the
    /// other user who edits too. Correct app code: only the pair's own rules decide.
    static func correct(stepsPerActor: Int = 4) -> Flow {
        var a: [Step] = [.insert("s1", entity: "CareSession", fields: ["title"]), .insert("e1", entity: "CareEvent", fields: ["note"]),
                         .link("e1", "session", to: "s1")]
        var b: [Step] = []
        var p: [Step] = []
        for index in 0..<stepsPerActor {
            a.append(.update(index % 2 == 0 ? "s1" : "e1", fields: index % 2 == 0 ? ["title"] : ["note"]))
            b.append(.update(index % 2 == 0 ? "e1" : "s1", fields: index % 2 == 0 ? ["note", "value"] : ["title"]))
            p.append(.update("e1", fields: ["value"]))
        }
        a.insert(.shareCreate("team"), at: 3)
        p.insert(.shareAccept("team"), at: 0)
        return Flow(name: "correct", actors: [
            FlowActor(device: "A", user: "olivia", steps: a),
            FlowActor(device: "B", user: "olivia", steps: b),
            FlowActor(device: "P", user: "pablo", steps: p),
        ], shares: [ShareSpec(name: "team", root: "s1", participants: [.init(user: "pablo", permission: "readWrite")])])
    }
}

extension Flows {
    /// The app keeps its own copy of a session while the editor is open and, on Save, writes
    /// that copy over whatever the store has — another device's edit merged meanwhile is lost.
    /// Wrong only when B's edit reaches A between A opening and saving the editor.
    static func savesItsOwnCopy(fixed: Bool = false) -> Flow {
        var flow = Flow(name: "saves its own copy over the server's", actors: [
            FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"]), .custom("openEditor"),
                                                           .update("s1", fields: ["id"]), .update("s1", fields: ["id"]), .custom("saveEditor")]),
            FlowActor(device: "B", user: "olivia", steps: [.update("s1", fields: ["title"]), .update("s1", fields: ["title"])]),
        ])
        flow.bind("openEditor") { context in
            context.memory["title"] = try await context.object("s1")?["title"]
            return .null
        }
        flow.bind("saveEditor") { context in
            guard let mine = context.memory["title"], let stored = try await context.object("s1") else { return .null }
            // The fixed app saves only what the user changed; the title was not touched.
            guard !fixed, stored["title"] != mine else { return .null }
            try await context.device.update(stored.objectID, ["title": mine])
            return ["overwrote": stored["title"] ?? .null]
        }
        return flow
    }

    /// The owner lowers the participant to readOnly; the participant's app, offline, keeps
    /// saving edits to the shared event without asking whether it may, and the pair reverts
    /// them when they reach the cloud: edits the user was told were saved are gone. The fixed
    /// app fetches and asks `permission.check` first, and sends as soon as it saves.
    static func writesAfterPermissionLowered(fixed: Bool = false) -> Flow {
        let edit: Step = fixed ? .custom("safeEdit") : .update("e1", fields: ["value"])
        var flow = Flow(name: "keeps writing after its permission was lowered", actors: [
            FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"]),
                                                           .insert("e1", entity: "CareEvent", fields: ["note"]), .link("e1", "session", to: "s1"),
                                                           .shareCreate("team"), .setPermission("team", user: "pablo", permission: "readOnly")]),
            FlowActor(device: "P", user: "pablo", steps: [.shareAccept("team"), edit, edit]),
        ], shares: [ShareSpec(name: "team", root: "s1", participants: [.init(user: "pablo", permission: "readWrite")])])
        flow.invariants.append(Invariant("noSilentlyRevertedEdits") { run in
            run.history.filter { $0.actor == "P" && $0.op == HistoryOp.send && ($0.outcome.result?["reverted"]?.intValue ?? 0) > 0 }.map {
                "P's sync.send #\($0.index) reverted \($0.outcome.result?["reverted"]?.intValue ?? 0) edit(s) the app had told the user were saved."
            }
        })
        flow.bind("safeEdit") { context in
            try await context.device.sync.fetch()
            guard let event = try await context.object("e1") else { return ["skipped": "not here"] }
            let verdict = try await context.device.permissionCheck([event.objectID])
            guard verdict.objects.first?.canUpdateRecord == true else { return ["skipped": "readOnly"] }
            try await context.device.update(event.objectID, ["value": .double(Double(context.seed % 1000) + 0.25)])
            try await context.device.sync.send()
            return ["saved": true]
        }
        return flow
    }

    /// After an orphan repair the participant's app takes each orphan the repair left alone
    /// (it is in the shared store, the default session in the private one) and assigns it to
    /// the session's store: Core Data refuses to reassign a saved object (an
    /// NSInvalidArgumentException in an app). The owner moves an event out of its session and
    /// back: only orders in which the participant fetched between the two and repaired before
    /// fetching again leave it an orphan there.
    static func assignsAfterOrphanRepair(fixed: Bool = false) -> Flow {
        var flow = Flow(name: "assigns a saved object to the other store after an orphan repair", actors: [
            FlowActor(device: "A", user: "olivia", steps: [.insert("s1", entity: "CareSession", fields: ["title"]),
                                                           .insert("e1", entity: "CareEvent", fields: ["note"]), .link("e1", "session", to: "s1"),
                                                           .shareCreate("team"), .link("e1", "session", to: nil), .link("e1", "session", to: "s1")]),
            FlowActor(device: "P", user: "pablo", steps: [.shareAccept("team"), .custom("repairOrphans")]),
        ], shares: [ShareSpec(name: "team", root: "s1", participants: [.init(user: "pablo", permission: "readWrite")])])
        flow.bind("repairOrphans") { context in
            let repair = try await context.device.repairOrphans()
            guard !fixed else { return ["leftAlone": .int(repair.skipped.count)] }
            for orphan in repair.skipped {
                try await context.device.withContext { ctx in
                    try await ctx.assign(orphan.objectID, to: "Private")
                    _ = try await ctx.save()
                }
            }
            return ["attached": .int(repair.attached)]
        }
        return flow
    }
}
