import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// Seeded random histories: inserts, field edits (a nil among them), deletes, sends,
    /// fetches and (with a participant) permission changes, in any order. Once every device has
    /// sent and fetched until nothing is pending, each holds exactly what a model of the
    /// documented rules says. The model keeps every edit with its stamp (the save's history
    /// timestamp, the device's name breaking ties) and whether it took effect:
    /// - an owner's edits always do; a participant's when its next send finds it readWrite on
    ///   the server, and none of them when that send finds it readOnly (they are reverted);
    /// - an event is there when its insert took effect and no delete did (`deleteWins`);
    /// - each field holds the value of its latest edit that took effect (`latestEdit`),
    ///   whichever device made it and in whatever order the steps reached the cloud.
    @Suite("Mirroring: random histories converge to the rules' outcome", .timeLimit(.minutes(5)))
    struct ConvergenceTests {
        /// A field edit's stamp, ordered as `latestEdit` orders them.
        struct Stamp: Comparable {
            var time: String
            var device: String
            static func < (a: Stamp, b: Stamp) -> Bool { (a.time, a.device) < (b.time, b.device) }
        }

        enum Change {
            /// An insert or an edit: the fields it set.
            case set([String: JSONValue])
            case delete
        }

        struct Edit {
            var id: String
            var change: Change
            var stamp: Stamp
        }

        /// What the rules make of the edits that took effect.
        struct Model {
            var effective: [Edit] = []
            /// A participant's edits not sent yet: they take effect, or not, at its next send.
            var tentative: [Edit] = []

            /// The events there should be: id → field → value.
            func outcome() -> [String: [String: JSONValue]] {
                var events: [String: [String: (JSONValue, Stamp)]] = [:]
                var deleted: Set<String> = []
                for edit in effective.sorted(by: { $0.stamp < $1.stamp }) {
                    switch edit.change {
                    case .delete: deleted.insert(edit.id)
                    case let .set(fields):
                        for (name, value) in fields { events[edit.id, default: [:]][name] = (value, edit.stamp) }
                    }
                }
                return events.filter { !deleted.contains($0.key) && $0.value["id"] != nil }.mapValues { $0.mapValues(\.0) }
            }

            /// The shared session's title: its latest effective edit.
            func title() -> JSONValue? {
                effective.filter { $0.id == ConvergenceTests.sessionKey }.max { $0.stamp < $1.stamp }.flatMap { edit in
                    if case let .set(fields) = edit.change { fields["title"] } else { nil }
                }
            }
        }

        /// Eight seeds per test; `MEOW_CONVERGENCE_SEEDS=N` runs N (a longer search:
        /// `MEOW_CONVERGENCE_SEEDS=500 swift test --filter ConvergenceTests`). A failure prints
        /// its seed and every step, and `MEOW_CONVERGENCE_SEED=S` runs that seed alone, which
        /// replays it exactly (the automatic variant's only approximately).
        /// `MEOW_CONVERGENCE_SEED_OFFSET=K` starts every test K seeds further on: a search
        /// beyond the seeds already searched (the printed seed replays as before).
        static func seeds(from first: UInt64) -> [UInt64] {
            let environment = ProcessInfo.processInfo.environment
            let count = environment["MEOW_CONVERGENCE_SEEDS"].flatMap { UInt64($0) } ?? 8
            if let only = environment["MEOW_CONVERGENCE_SEED"].flatMap({ UInt64($0) }) { return [only] }
            let start = first + (environment["MEOW_CONVERGENCE_SEED_OFFSET"].flatMap { UInt64($0) } ?? 0)
            return Array(start..<(start + max(1, count)))
        }

        static let editable = ["value", "note", "eventTypeRaw"]
        /// The id of the moves variant's second session; its events stay in the core-data zone.
        static let otherSession = "kept"
        /// The model's key for the session's edits (no event id looks like it).
        static let sessionKey = "#session"
        static let titles: [JSONValue] = ["Mochi", "Mochi at the vet", "Mochi 🐱", "Tama"]
        static let notes: [JSONValue] = [.null, "before breakfast", "after dinner", "re-measured", "vet said ok"]
        static let types: [JSONValue] = ["bloodGlucose", "insulin", "feeding", "note"]

        /// Equal values (numbers by value: 130 and 130.0 are one value).
        static func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
            a == b || (a.doubleValue != nil && a.doubleValue == b.doubleValue)
        }

        /// One device as the test drives it: its history cursor gives each local save's stamp.
        final class Driven {
            var device: Device
            /// Where its stores live when it can be killed and restarted (nil: in memory).
            var dataDirectory: String?
            var user = "owner"
            var extra: [String] = []
            /// The store its events are in (a participant's are in its shared store).
            let store: String
            let isParticipant: Bool
            /// Its objectID of the session every event belongs to (nil: no session).
            var session: String?
            /// Its objectID of a second, never shared session events move to and back (moves variant).
            var otherSession: String?
            var lastToken = 0
            init(_ device: Device, store: String = "Private", isParticipant: Bool = false) {
                self.device = device
                self.store = store
                self.isParticipant = isParticipant
            }

            /// Skips the history so far (the set-up's saves and imports).
            func catchUp() async throws { _ = try await lastSave() }

            /// The newest local (non-sync) save since the last call: its stamp and its changes;
            /// nil when there was none (an edit an import had already made changes nothing).
            func lastSave() async throws -> (stamp: Stamp, changes: [JSONValue])? {
                let history = try await device.call("history.fetch", ["store": .string(store), "afterToken": .int(lastToken)])
                lastToken = history["lastTokens"]?[store]?.intValue ?? lastToken
                guard let own = (history["transactions"]?.arrayValue ?? []).last(where: { $0["author"] != "sync" }),
                      let time = own["timestamp"]?.stringValue else { return nil }
                return (Stamp(time: time, device: device.name), own["changes"]?.arrayValue ?? [])
            }

            /// The fields of `changes` that the last save really changed on `objectID` (an
            /// automatic device's import may have set some to the same values just before).
            func savedChanges(_ changes: [String: JSONValue], of objectID: String) async throws -> (Stamp, [String: JSONValue])? {
                guard let save = try await lastSave(),
                      let change = save.changes.first(where: { $0["objectID"]?.stringValue == objectID }) else { return nil }
                let changed = Set((change["changedProperties"]?.arrayValue ?? []).compactMap(\.stringValue))
                let kept = changes.filter { changed.contains($0.key) }
                return kept.isEmpty ? nil : (save.stamp, kept)
            }

            /// Runs one save step; false when the device refused it for want of permission (a
            /// participant that knows it is readOnly), or when the object is gone (an automatic
            /// device imported its deletion after the test read it): either changes nothing.
            func save(_ body: () async throws -> Void) async throws -> Bool {
                do {
                    try await body()
                    return true
                } catch let error as WireError where isParticipant && error.code == .permissionFailure {
                    return false
                } catch let error as WireError where error.code == .unknownObject {
                    return false
                }
            }
        }

        /// The cloud, and for the crash variant what kills and restarts the processes.
        final class Deployment {
            var cloud: Cloud
            /// Crash points are armed (kill -9 at a named point's n-th hit) and a dead process
            /// is restarted on its files; a step it died in changes the model only as far as
            /// history shows.
            let crashes: Bool
            /// Whether a restarted process is armed again (not while settling at the end).
            var rearm = true
            var random: SplitMix64
            var restarts: [String] = []

            init(cloud: Cloud, crashes: Bool = false, random: SplitMix64 = SplitMix64(state: 0)) {
                self.cloud = cloud
                self.crashes = crashes
                self.random = random
            }

            static let devicePoints = ["store.afterSaveCommit", "store.midSave", "mirror.afterServerReply", "mirror.afterApplyingPage", "mirror.midImport"]
            static let cloudPoints = ["sync.afterCommit", "sync.midBatch"]

            /// A crash point for a process about to start: half the time one of `points` at its
            /// first to sixth hit, else none.
            static func arm(_ points: [String], _ random: inout SplitMix64) -> [String: String] {
                guard random.next() % 2 == 0 else { return ["MEOW_CRASH_AT": ""] }
                let point = points[Int(random.next() % UInt64(points.count))]
                return ["MEOW_CRASH_AT": "\(point):\(1 + random.next() % 6)"]
            }

            /// The point each process was last started with (what it died at, if it died).
            var armed: [String: String] = [:]

            func arm(_ points: [String], for name: String) -> [String: String] {
                let environment = crashes && rearm ? Self.arm(points, &random) : ["MEOW_CRASH_AT": ""]
                armed[name] = environment["MEOW_CRASH_AT"]
                return environment
            }

            /// After a failed step: restarts every process that died (the cloud on its files,
            /// a device on its own), armed again or not. Rethrows `error` when none had died: a
            /// failure no crash explains is the test's to report.
            func recover(_ devices: [Driven], from error: any Error) async throws {
                let before = restarts.count
                if let probe = try? await cloud.connect("owner-secret") {
                    probe.close()
                } else {
                    _ = await cloud.process.waitForExit(timeout: .seconds(10))
                    restarts.append("cloud (armed \(armed["cloud"] ?? "-"))")
                    cloud = try await Cloud.start(directory: cloud.directory, onDisk: true, environment: arm(Self.cloudPoints, for: "cloud"))
                }
                for driven in devices {
                    if (try? await driven.device.call("ping")) != nil { continue }
                    _ = await driven.device.process.waitForExit(timeout: .seconds(10))
                    driven.device.client.close()
                    let name = driven.device.name
                    restarts.append("\(name) (armed \(armed[name] ?? "-"))")
                    driven.device = try await Device.start(name, user: driven.user, cloud: cloud, extra: driven.extra,
                                                           dataDirectory: driven.dataDirectory, environment: arm(Self.devicePoints, for: name))
                }
                if restarts.count == before { throw error }
            }
        }

        /// Devices A and B and the cloud on disk, each armed to die by kill -9 at a random named
        /// point (after a save's commit, in its transaction, after a server's reply, after or in a
        /// fetched page's import; after the cloud's commit or in its batch) and restarted on its
        /// files. History tells which interrupted saves happened; the rest must still converge.
        @Test("seeded histories with kill -9 of devices and cloud at named points converge to the model's events and fields",
              arguments: seeds(from: 300))
        func crashesOnTheWay(seed: UInt64) async throws {
            try await runWithCrashes(seed: seed, automatic: false)
        }

        /// The same with both devices in automatic mode: their own passes hit the crash points
        /// too, at moments the steps do not choose.
        @Test("seeded histories on two automatic-mode devices, killed at named points, converge to the model's events and fields",
              arguments: seeds(from: 400))
        func automaticDevicesWithCrashes(seed: UInt64) async throws {
            try await runWithCrashes(seed: seed, automatic: true)
        }

        func runWithCrashes(seed: UInt64, automatic: Bool) async throws {
            // Crash points come from a stream of their own, so the steps' stream is the seed's.
            var crashRandom = SplitMix64(state: seed ^ 0xC0FFEE)
            let directory = TemporaryDirectory(prefix: "cv")
            let cloudPoint = Deployment.arm(Deployment.cloudPoints, &crashRandom)
            let cloud = try await Cloud.start(directory: directory, onDisk: true, environment: cloudPoint)
            let deployment = Deployment(cloud: cloud, crashes: true, random: crashRandom)
            deployment.armed["cloud"] = cloudPoint["MEOW_CRASH_AT"]
            var devices: [Driven] = []
            for name in ["A", "B"] {
                let data = directory.file("\(name)-data")
                let extra = automatic ? ["--sync-mode", "automatic"] : []
                let driven = Driven(try await Device.start(name, user: "owner", cloud: deployment.cloud, extra: extra, dataDirectory: data,
                                                           environment: deployment.arm(Deployment.devicePoints, for: name)))
                driven.dataDirectory = data
                driven.extra = extra
                devices.append(driven)
            }
            try await run(seed: seed, deployment: deployment, devices: devices, zone: ["zoneName": "com.apple.coredata.cloudkit.zone"], shareZone: nil,
                          automatic: automatic)
        }

        @Test("seeded histories on devices A and B of one user converge to the model's events and fields", arguments: seeds(from: 100))
        func twoDevicesOfOneUser(seed: UInt64) async throws {
            let cloud = try await Cloud.start()
            let devices = [Driven(try await Device.start("A", user: "owner", cloud: cloud)),
                           Driven(try await Device.start("B", user: "owner", cloud: cloud))]
            try await run(seed: seed, cloud: cloud, devices: devices, zone: ["zoneName": "com.apple.coredata.cloudkit.zone"], shareZone: nil)
        }

        /// Both devices in automatic mode: they send after saves and fetch on pushes by
        /// themselves, between and during the test's own steps. The rules' outcome holds for any
        /// interleaving, so the check is as strict; but which objects a step finds depends on
        /// when the devices synced, so a seed replays its steps only approximately.
        @Test("seeded histories on two automatic-mode devices of one user converge to the model's events and fields", arguments: seeds(from: 200))
        func twoAutomaticDevices(seed: UInt64) async throws {
            let cloud = try await Cloud.start()
            let automatic = ["--sync-mode", "automatic"]
            let devices = [Driven(try await Device.start("A", user: "owner", cloud: cloud, extra: automatic)),
                           Driven(try await Device.start("B", user: "owner", cloud: cloud, extra: automatic))]
            try await run(seed: seed, cloud: cloud, devices: devices, zone: ["zoneName": "com.apple.coredata.cloudkit.zone"], shareZone: nil,
                          automatic: true)
        }

        @Test("seeded histories on owner devices A, B and a participant P of a shared session, whose permission flips, converge to the model",
              arguments: seeds(from: 1))
        func ownerDevicesAndParticipant(seed: UInt64) async throws {
            let cloud = try await Cloud.start()
            let a = Driven(try await Device.start("A", user: "owner", cloud: cloud))
            let b = Driven(try await Device.start("B", user: "owner", cloud: cloud))
            let p = Driven(try await Device.start("P", user: "alice", cloud: cloud), store: "Shared", isParticipant: true)
            let session = try await a.device.insertSession("mochi")
            try await a.device.send()
            let created = try await a.device.call("share.create", ["objectID": .string(session),
                                                                   "participants": [["user": "alice", "permission": "readWrite"]]])
            let zoneName = try #require(created["zoneName"]?.stringValue)
            try await p.device.call("share.accept", ["zoneName": .string(zoneName), "ownerName": "owner"])
            try await b.device.fetch()
            try await p.device.fetch()
            a.session = session
            b.session = try #require(try await b.device.object(id: "mochi", entity: "CareSession")?["objectID"]?.stringValue)
            p.session = try #require(try await p.device.objects("CareSession", store: "Shared").first?["objectID"]?.stringValue)
            try await run(seed: seed, cloud: cloud, devices: [a, b, p], zone: ["zoneName": .string(zoneName)], shareZone: zoneName)
        }

        /// A shares the session now and then (its events move into a new share zone, their old
        /// copies deleted unconditionally) and stops sharing (they stay in the share zone), while
        /// A and B edit, log and delete events of the session: every move races the other
        /// device's edits; either device also moves events between that session and a second one
        /// it never shares (an event's session is a field like the others, its latest edit wins,
        /// and its record lives in its session's zone). Found, each pinned in `SharingTests`:
        /// an edited event both devices moved, each into another zone, came back without the
        /// edit (seeds 602, 604, 616, 624, 653: "Two devices moving one event into different
        /// zones…"); moves left a second copy in another zone (8 of 60 seeds: "An event one
        /// device moves to another session while the other shares…"); an event deleted on one
        /// device came back when the other moved it away and back (seed 1064: "An event deleted
        /// on one device and moved back…"). The window inside a move itself needs an exact
        /// interleaving: `SharingTests.editSentWhileAnotherDeviceMovesTheSession`.
        @Test("seeded histories on devices A and B of one user, A sharing the session and stopping, converge to the model",
              arguments: seeds(from: 600))
        func twoDevicesWhileTheSessionMoves(seed: UInt64) async throws {
            try await sessionMoves(seed: seed, automatic: false)
        }

        /// The same on two automatic-mode devices: moves race the devices' own sends and fetches.
        /// Found: a fetch held an event's tombstone in one round and saw it moved back into that
        /// zone in the next, then applied the older tombstone and deleted it (about 1 history
        /// in 40; `dropTombstones`); share.create moved a stale copy of an event another device
        /// had just moved elsewhere (seed 877: "An event another device moves out of a session
        /// while the session is being shared again…"); an edit whose event moved away and back
        /// met the delete policy (seed 724: "An edit that finds its event moved away, then
        /// back…"); two devices moving one record into different zones at once left a copy in
        /// each (seed 878, about 1 in 900: `MoveRaceTests`).
        @Test("seeded histories on two automatic-mode devices of one user, A sharing the session and stopping, converge to the model",
              arguments: seeds(from: 700))
        func twoAutomaticDevicesWhileTheSessionMoves(seed: UInt64) async throws {
            try await sessionMoves(seed: seed, automatic: true)
        }

        /// The same with a cloud that takes 4 items per request: share.create cannot move even a
        /// small session in one request (its first save meets limitExceeded), so it moves the root
        /// with the share and the events follow by the send (the path of sessions over 200
        /// events), and sends split their batches.
        @Test("seeded histories on two automatic-mode devices, A sharing the session root first (a 4-item request limit), converge to the model",
              arguments: seeds(from: 1100))
        func twoAutomaticDevicesWhileTheSessionMovesRootFirst(seed: UInt64) async throws {
            try await sessionMoves(seed: seed, automatic: true, requestLimit: 4)
        }

        /// The root-first path again, chosen by A itself at the cloud's default limit: A starts
        /// with 9-item batches (`--batch-size 9`), so a session of more than 4 records moves root
        /// first. Forcing that path this way (then by a temporary change) found a fetch applying
        /// a held deletion of a session another device had just moved, its events going with it
        /// (5 of 400 histories; held deletions now wait for a round with no changes, pinned by
        /// `HeldDeletionTests`).
        @Test("seeded histories on two automatic-mode devices, A sharing the session root first (9-item batches), converge to the model",
              arguments: seeds(from: 1200))
        func twoAutomaticDevicesWhileTheSessionMovesInSmallBatches(seed: UInt64) async throws {
            try await sessionMoves(seed: seed, automatic: true, batchSizeOfA: 9)
        }

        func sessionMoves(seed: UInt64, automatic: Bool, requestLimit: Int? = nil, batchSizeOfA: Int? = nil) async throws {
            let cloud = try await Cloud.start()
            if let requestLimit { _ = try await cloud.admin("admin.setLimits", ["maxItemsPerRequest": .int(requestLimit)]) }
            let extra = automatic ? ["--sync-mode", "automatic"] : []
            let a = Driven(try await Device.start("A", user: "owner", cloud: cloud, extra: extra + (batchSizeOfA.map { ["--batch-size", String($0)] } ?? [])))
            let b = Driven(try await Device.start("B", user: "owner", cloud: cloud, extra: extra))
            a.session = try await a.device.insertSession("mochi")
            a.otherSession = try await a.device.insertSession(Self.otherSession, title: "Kept private")
            try await a.device.send()
            try await b.device.fetch()
            b.session = try #require(try await b.device.object(id: "mochi", entity: "CareSession")?["objectID"]?.stringValue)
            b.otherSession = try #require(try await b.device.object(id: Self.otherSession, entity: "CareSession")?["objectID"]?.stringValue)
            try await run(seed: seed, cloud: cloud, devices: [a, b], zone: ["zoneName": "com.apple.coredata.cloudkit.zone"], shareZone: nil,
                          automatic: automatic, moves: true)
        }

        func run(seed: UInt64, cloud: Cloud, devices: [Driven], zone: JSONValue, shareZone: String?, automatic: Bool = false,
                 moves: Bool = false) async throws {
            try await run(seed: seed, deployment: Deployment(cloud: cloud), devices: devices, zone: zone, shareZone: shareZone, automatic: automatic,
                          moves: moves)
        }

        /// `moves`: the first device shares its session and stops sharing, now and then.
        func run(seed: UInt64, deployment: Deployment, devices: [Driven], zone: JSONValue, shareZone: String?, automatic: Bool = false,
                 moves: Bool = false) async throws {
            var random = SplitMix64(state: seed)
            func pick(_ count: Int) -> Int { Int(random.next() % UInt64(count)) }
            for driven in devices { try await driven.catchUp() }
            var model = Model()
            var steps: [String] = []
            var counter = 0
            var permission = "readWrite"
            /// The zone the session's events live in (moves: the last share zone, once shared).
            var eventZone = zone
            var sharedZone: String?

            func record(_ edits: [Edit], by driven: Driven) {
                if driven.isParticipant { model.tentative += edits } else { model.effective += edits }
            }
            /// Runs a step; when a process died in it (the crash variant), restarts what died and
            /// answers false.
            func survive(_ body: () async throws -> Void) async throws -> Bool {
                guard deployment.crashes else { try await body(); return true }
                do {
                    try await body()
                    return true
                } catch {
                    try await deployment.recover(devices, from: error)
                    steps.append("  … \(deployment.restarts.last ?? "nothing") restarted after: \(error)")
                    return false
                }
            }
            /// A read (or a look at history): when a process died meanwhile (an automatic device's
            /// own pass may hit its crash point at any moment), what died is restarted and the
            /// read is made again.
            func resilient<T>(_ body: () async throws -> T) async throws -> T {
                var attempts = 0
                while true {
                    do {
                        return try await body()
                    } catch where deployment.crashes && attempts < 5 {
                        attempts += 1
                        try await deployment.recover(devices, from: error)
                        steps.append("  … \(deployment.restarts.last ?? "nothing") restarted after: \(error)")
                    }
                }
            }
            /// A save step: false when the device refused it (nothing happened); true when it
            /// saved, or died on the way (history says whether the save happened).
            func saving(_ driven: Driven, _ body: () async throws -> Void) async throws -> Bool {
                var allowed = true
                _ = try await survive { allowed = try await driven.save(body) }
                return allowed
            }
            /// A participant's send: its pending edits take effect if the server lets it write.
            func sent(_ driven: Driven) {
                guard driven.isParticipant else { return }
                if permission == "readWrite" { model.effective += model.tentative }
                model.tentative = []
            }

            for _ in 0..<70 {
                let driven = devices[pick(devices.count)]
                // Read afresh at each use: a step may restart the device.
                var device: Device { driven.device }
                let roll = pick(100)
                if roll < 20 {
                    // Insert one or two events.
                    var events: [[String: JSONValue]] = []
                    for _ in 0..<(1 + pick(2)) {
                        counter += 1
                        var event: [String: JSONValue] = ["id": .string("\(device.name)-\(counter)"), "occurredAt": "2026-07-27T09:00:00Z",
                                                          "updatedAt": "2026-07-27T09:00:00Z", "value": .double(Double(60 + pick(300))),
                                                          "eventTypeRaw": Self.types[pick(Self.types.count)]]
                        let note = Self.notes[pick(Self.notes.count)]
                        if note != .null { event["note"] = note }
                        if let session = driven.session { event["session"] = .string(session) }
                        events.append(event)
                    }
                    guard try await saving(driven, {
                        let context = try await device.context()
                        for event in events {
                            try await device.call("object.insert", ["context": .string(context), "entity": "CareEvent", "values": .object(event)])
                        }
                        do {
                            try await device.call("context.save", ["context": .string(context)])
                        } catch {
                            _ = try? await device.call("context.close", ["context": .string(context)])
                            throw error
                        }
                        try await device.call("context.close", ["context": .string(context)])
                    }) else { steps.append("\(device.name) may not insert"); continue }
                    guard let save = try await resilient({ try await driven.lastSave() }), save.changes.contains(where: { $0["kind"] == "insert" }) else {
                        steps.append("\(device.name)'s insert of \(events.compactMap { $0["id"]?.stringValue }) died before its commit")
                        continue
                    }
                    record(events.map { event in
                        var fields: [String: JSONValue] = ["id": event["id"] ?? .null]
                        for name in Self.editable { fields[name] = event[name] ?? .null }
                        if moves { fields["session"] = "mochi" }
                        return Edit(id: event["id"]?.stringValue ?? "", change: .set(fields), stamp: save.stamp)
                    }, by: driven)
                    steps.append("\(device.name) inserts \(events.compactMap { $0["id"]?.stringValue })")
                } else if roll < 50, moves, driven.otherSession != nil, pick(4) == 0, let session = driven.session, let other = driven.otherSession {
                    // Move an event this device holds into the other session (a field edit that moves its record).
                    let held = try await device.objects()
                    guard !held.isEmpty else { continue }
                    let object = held[pick(held.count)]
                    let id = try #require(object["values"]?["id"]?.stringValue)
                    let objectID = try #require(object["objectID"]?.stringValue)
                    let toOther = object["values"]?["session"]?.stringValue != other
                    guard try await saving(driven, { try await device.set(objectID, ["session": .string(toOther ? other : session)]) }) else {
                        steps.append("\(device.name) may not move \(id)")
                        continue
                    }
                    guard let (stamp, _) = try await driven.savedChanges(["session": .null], of: objectID) else { continue }
                    record([Edit(id: id, change: .set(["session": toOther ? .string(Self.otherSession) : "mochi"]), stamp: stamp)], by: driven)
                    steps.append("\(device.name) moves \(id) to \(toOther ? Self.otherSession : "mochi")")
                } else if roll < 50 {
                    // Edit one or two fields of an event this device holds, each to a value it does not have.
                    let held = try await resilient { try await device.objects() }
                    guard !held.isEmpty else { continue }
                    let object = held[pick(held.count)]
                    let id = try #require(object["values"]?["id"]?.stringValue)
                    var changes: [String: JSONValue] = [:]
                    for _ in 0..<(1 + pick(2)) {
                        let name = Self.editable[pick(Self.editable.count)]
                        let choices: [JSONValue] = switch name {
                        case "value": [.double(Double(60 + pick(300)))]
                        case "note": Self.notes
                        default: Self.types
                        }
                        let fresh = choices.filter { !Self.same($0, object["values"]?[name] ?? .null) }
                        if !fresh.isEmpty { changes[name] = fresh[pick(fresh.count)] }
                    }
                    guard !changes.isEmpty else { continue }
                    let objectID = try #require(object["objectID"]?.stringValue)
                    guard try await saving(driven, { try await device.set(objectID, .object(changes)) }) else {
                        steps.append("\(device.name) may not set \(id)")
                        continue
                    }
                    guard let (stamp, saved) = try await resilient({ try await driven.savedChanges(changes, of: objectID) }) else {
                        steps.append("\(device.name)'s edit of \(id) changed nothing (already so, or died before its commit)")
                        continue
                    }
                    changes = saved
                    record([Edit(id: id, change: .set(changes), stamp: stamp)], by: driven)
                    steps.append("\(device.name) sets \(id) \(JSONWriter.text(.object(changes)))")
                } else if roll < 58 {
                    let held = try await resilient { try await device.objects() }
                    guard !held.isEmpty else { continue }
                    let object = held[pick(held.count)]
                    let id = try #require(object["values"]?["id"]?.stringValue)
                    let objectID = try #require(object["objectID"]?.stringValue)
                    guard try await saving(driven, { try await device.delete(objectID) }) else {
                        steps.append("\(device.name) may not delete \(id)")
                        continue
                    }
                    guard let save = try await resilient({ try await driven.lastSave() }),
                          save.changes.contains(where: { $0["objectID"]?.stringValue == objectID }) else {
                        steps.append("\(device.name)'s delete of \(id) died before its commit")
                        continue
                    }
                    record([Edit(id: id, change: .delete, stamp: save.stamp)], by: driven)
                    steps.append("\(device.name) deletes \(id)")
                } else if roll < 62, let session = driven.session {
                    // Edit the session's title (the share's root record, in a shared session).
                    let current = try await resilient { try await device.object(id: "mochi", entity: "CareSession") }?["values"]?["title"] ?? .null
                    let fresh = Self.titles.filter { $0 != current }
                    let title = fresh[pick(fresh.count)]
                    guard try await saving(driven, { try await device.set(session, ["title": title]) }) else {
                        steps.append("\(device.name) may not retitle the session")
                        continue
                    }
                    guard let (stamp, saved) = try await resilient({ try await driven.savedChanges(["title": title], of: session) }) else { continue }
                    record([Edit(id: Self.sessionKey, change: .set(saved), stamp: stamp)], by: driven)
                    steps.append("\(device.name) titles the session \(JSONWriter.text(title))")
                } else if roll < 67, let shareZone {
                    permission = permission == "readWrite" ? "readOnly" : "readWrite"
                    try await devices[0].device.call("share.setPermission", ["zoneName": .string(shareZone), "user": "alice",
                                                                              "permission": .string(permission)])
                    steps.append("A makes P \(permission)")
                } else if roll < 67, moves, let session = devices[0].session {
                    if let zoneName = sharedZone {
                        try await devices[0].device.call("share.stop", ["zoneName": .string(zoneName)])
                        sharedZone = nil
                        steps.append("A stops sharing")
                    } else {
                        let created = try await devices[0].device.call("share.create", ["objectID": .string(session)])
                        let zoneName = try #require(created["zoneName"]?.stringValue)
                        sharedZone = zoneName
                        eventZone = ["zoneName": .string(zoneName)]
                        steps.append("A shares the session in \(zoneName.suffix(8)) (\(created["movedRecords"] ?? .null) records)")
                    }
                } else if roll < 83 {
                    var report: JSONValue = .null
                    if try await survive({ report = try await device.send() }) { sent(driven) }
                    steps.append("\(device.name) sends \(JSONWriter.text(report))")
                } else {
                    _ = try await survive { try await device.fetch() }
                    steps.append("\(device.name) fetches")
                }
            }

            // Every device sends and fetches until none has anything pending (processes that
            // die now come back unarmed).
            deployment.rearm = false
            var settled = false
            for _ in 0..<8 where !settled {
                // Settled: a round in which every send and fetch ran to its end and left nothing pending.
                var clean = true
                for driven in devices {
                    if try await survive({ try await driven.device.send() }) { sent(driven) } else { clean = false }
                }
                for driven in devices where !(try await survive { try await driven.device.fetch() }) { clean = false }
                var pending = 0
                for driven in devices { pending += try await resilient { try await driven.device.pending() } }
                settled = clean && pending == 0
            }
            let trace = "seed \(seed):\n" + steps.joined(separator: "\n")
            #expect(settled, "still pending after eight rounds; \(trace)")

            let expected = model.outcome()
            let title = model.title() ?? "Mochi"
            for driven in devices {
                var device: Device { driven.device }
                // (An automatic device may be starting a pass of its own, which finds nothing.)
                if !automatic { #expect(try await device.status()["quiescent"] == true, "\(device.name) not quiescent; \(trace)") }
                if driven.session != nil {
                    let session = try await resilient { try await device.object(id: "mochi", entity: "CareSession") }?["values"]?["title"]
                    #expect(session == title, "\(device.name)'s session is titled \(String(describing: session)), the model \(title); \(trace)")
                }
                let held = try await resilient { try await device.objects() }
                let ids = held.compactMap { $0["values"]?["id"]?.stringValue }
                #expect(ids == expected.keys.sorted(), "\(device.name) holds \(ids), the model \(expected.keys.sorted()); \(trace)")
                for object in held {
                    guard let id = object["values"]?["id"]?.stringValue, let fields = expected[id] else { continue }
                    for name in Self.editable {
                        let value = object["values"]?[name] ?? .null
                        let wanted = fields[name] ?? .null
                        #expect(Self.same(value, wanted), "\(device.name) \(id).\(name) = \(value), the model \(wanted); \(trace)")
                    }
                    if moves {
                        let session: JSONValue = object["values"]?["session"]?.stringValue == driven.otherSession ? .string(Self.otherSession) : "mochi"
                        #expect(session == fields["session"], "\(device.name) \(id) is in session \(session), the model \(fields["session"] ?? .null); \(trace)")
                    }
                }
            }
            let records = try await resilient { try await deployment.cloud.records(user: "owner", zone: eventZone) }.filter { $0["recordType"] == "CD_CareEvent" }
            if moves, eventZone != zone {
                // Each event's record is in its session's zone.
                let kept = expected.filter { $0.value["session"] == .string(Self.otherSession) }.keys.sorted()
                let inShare = expected.keys.filter { !kept.contains($0) }.sorted()
                let shareIDs = try await deployment.cloud.eventIDs(zoneName: eventZone["zoneName"]?.stringValue ?? "")
                let keptIDs = try await deployment.cloud.eventIDs(zoneName: "com.apple.coredata.cloudkit.zone")
                #expect(shareIDs == inShare, "the share zone holds \(shareIDs), the model \(inShare); \(trace)")
                #expect(keptIDs == kept, "the core-data zone holds \(keptIDs), the model \(kept); \(trace)")
            } else {
                #expect(records.count == expected.count, "the cloud holds \(records.count) events, the model \(expected.count); \(trace)")
            }
            for driven in devices { _ = await driven.device.stop() }
            await deployment.cloud.stop()
        }
    }
}
