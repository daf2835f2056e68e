import Foundation
import MeowWire
import TestSupport
import Testing

/// kill -9 of every process under a seeded random workload on an app's own model (TripLog: trips,
/// days, photos, tags with many-to-many): the owner's two devices and a participant's insert,
/// update and delete, move photos between days (to-many), tag and untag photos (many-to-many),
/// and the owner shares trips, changes the participant's permission and stops sharing while she
/// accepts. Each round arms one kill — a device's store-service or the sync-service, at a random
/// hit of a named point or by SIGKILL on a random acknowledgement, the call in flight — and
/// restarts the victim after it. Operations run one after another, each on a device that has
/// first synced and then sends what it wrote, so a model kept from the acknowledged operations
/// says what every device holds; an operation whose reply a kill took must show all of its
/// change or none. After the rounds: the devices and the cloud hold the model exactly, no id
/// twice, every trip's graph in one zone, the participant's permission as last acknowledged,
/// every SQLite file passes integrity_check.
///
/// `MEOW_KILL_SEED`, `MEOW_KILL_ITERATIONS` and `MEOW_KILL_ROUNDS` (kills per iteration) widen a
/// run (scripts/reliability.sh); CI runs 2 iterations of 4 kills. Each kill prints one
/// `kill-workload:` line, each iteration one `kill-workload-iteration:` line.
@Suite("Kill -9 under a random workload of edits, links and sharing", .serialized)
struct RandomWorkloadKillTests {
    static let environment = ProcessInfo.processInfo.environment
    static let seed = environment["MEOW_KILL_SEED"].flatMap { UInt64($0) } ?? 0x574F_524B   // "WORK"
    /// `MEOW_KILL_ITERATION=N` runs that one iteration alone (a failure's line names it).
    static let iterations = environment["MEOW_KILL_ITERATION"].flatMap { Int($0) }.map { [$0] }
        ?? Array(0..<(environment["MEOW_KILL_ITERATIONS"].flatMap { Int($0) } ?? 2))
    static let rounds = environment["MEOW_KILL_ROUNDS"].flatMap { Int($0) } ?? 4
    /// Operations a round runs before a kill still armed is delivered at rest.
    static let operationsPerRound = 8

    @Test("kill -9 of any process under inserts, updates, deletes, link changes and sharing: nothing acknowledged lost or doubled, devices and cloud converge",
          arguments: iterations)
    func randomWorkload(iteration: Int) async throws {
        let workload = try KillWorkload(seed: Self.seed, iteration: iteration)
        do {
            try await workload.harness.startAll()
            try await workload.warmUp()
            for _ in 0..<Self.rounds { try await workload.round(operations: Self.operationsPerRound) }
            try await workload.settleAndCheck()
        } catch {
            await workload.harness.stopAll()
            throw error
        }
        await workload.harness.stopAll()
        let problems = try await workload.harness.integrityProblems()
        #expect(problems.isEmpty, "\(workload.tag): integrity_check: \(problems)")
        print("kill-workload-iteration: seed=\(Self.seed) iteration=\(iteration) kills=\(workload.kills) operations=\(workload.operations) "
              + "acknowledged=\(workload.acknowledged) unknown=\(workload.unknown) unknownApplied=\(workload.unknownApplied) objects=\(workload.model.objects.count) "
              + "shares=\(workload.model.shares.count) kinds=\(workload.performed.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ","))")
    }
}

/// One iteration's workload: the seeded choice of operations, their execution with the kill
/// handling, and the checks.
final class KillWorkload: @unchecked Sendable {
    // @unchecked: one test drives it, one call at a time.
    typealias Entity = KillWorkloadModel.Entity
    let harness: KillWorkloadHarness
    var model = KillWorkloadModel()
    var rng: SplitMix64
    let seed: UInt64
    let iteration: Int
    var counter = 0
    var kills = 0, operations = 0, acknowledged = 0, unknown = 0, unknownApplied = 0
    /// The operation running now, for the kill lines.
    var current = "idle" {
        didSet {
            if KillWorkload.trace { print("kill-workload-trace: op#\(operations) \(current)") }
            if !current.hasPrefix("sync") && !current.hasPrefix("send") && current != "atRest" && current != "settle" { performed[current, default: 0] += 1 } }
    }
    /// Operations run, by kind.
    var performed: [String: Int] = [:]

    /// `MEOW_KILL_TRACE=1` prints every step, to read a failing seed's history.
    static let trace = ProcessInfo.processInfo.environment["MEOW_KILL_TRACE"] != nil

    var tag: String { "seed=\(seed) iteration=\(iteration) op#\(operations) \(current)" }

    init(seed: UInt64, iteration: Int) throws {
        self.seed = seed
        self.iteration = iteration
        rng = SplitMix64(state: seed &+ UInt64(iteration) &* 0x9E37_79B9_7F4A_7C15)
        harness = try KillWorkloadHarness()
    }

    func fresh() -> String {
        counter += 1
        return String(format: "%08X-%04X-4000-8000-%012X", UInt32(truncatingIfNeeded: seed), iteration & 0xFFFF, counter)
    }

    /// Two trips of two days with a photo each, some tagged, before any kill is armed.
    func warmUp() async throws {
        for _ in 0..<2 { try await perform(insertTrip("O1"), on: "O1", objectIDs: [:]) }
        for trip in model.ids(.Trip) {
            for _ in 0..<2 { try await perform(insertDay("O1", trip), on: "O1", objectIDs: try await snapshot("O1").objectIDs) }
        }
        for day in model.ids(.Day) {
            try await perform(insertPhoto("O1", day, tagTrips: model.ids(.Trip)), on: "O1", objectIDs: try await snapshot("O1").objectIDs)
        }
        performed = [:]
        operations = 0
        acknowledged = 0
    }

    // MARK: Rounds and kills

    func round(operations count: Int) async throws {
        let kill = KillWorkloadHarness.Kill.random(&rng)
        try await harness.arm(kill)
        for _ in 0..<count where harness.armed != nil {
            try await runOne()
        }
        if harness.armed != nil {
            // The point was not reached (or k beyond the acknowledgements): delivered at rest.
            current = "atRest"
            let status = try await harness.killAtRest()
            record(kill, status: status, atRest: true)
        }
    }

    /// After a failed call: whether the armed kill explains it (then the victim is reaped and
    /// restarted, and the kill counted). A failure nothing explains is a finding.
    func killExplains(_ error: Error) async throws -> Bool {
        guard let kill = harness.armed, await harness.struck() else {
            Issue.record("\(tag): a call failed and no kill explains it: \(error)")
            return false
        }
        let status = try await harness.reap()
        record(kill, status: status, atRest: false)
        return true
    }

    /// Before the test reads the cloud itself: a SIGKILL already sent to it is reaped first.
    func cloudUp() async throws {
        guard let kill = harness.armed, kill.victim == "cloud", harness.sigkillSent else { return }
        record(kill, status: try await harness.reap(), atRest: false)
    }

    func record(_ kill: KillWorkloadHarness.Kill, status: Int32?, atRest: Bool) {
        kills += 1
        #expect(status.map(Int.init) == 137, "\(tag): \(kill): the victim died as kill -9 would (status \(status.map(String.init) ?? "none"))")
        let point = kill.point.map { String($0.prefix { $0 != ":" }) } ?? "sigkill"
        print("kill-workload: seed=\(seed) iteration=\(iteration) kill=\(kills) \(kill) point=\(atRest ? "atRest" : point) op=\(current)")
    }

    /// Runs `body` until it succeeds, restarting what a kill took in between.
    func retrying(_ what: String, _ body: () async throws -> Void) async throws {
        for _ in 0..<4 {
            do { try await body(); return } catch {
                guard try await killExplains(error) else { throw TestFailure("\(tag): \(what) failed: \(error)") }
            }
        }
        throw TestFailure("\(tag): \(what) still failing after restarts")
    }

    /// Sends and fetches until the device has nothing queued.
    func sync(_ device: String) async throws {
        try await retrying("sync.now on \(device)") {
            for _ in 0..<3 {
                try await harness.call(device, "sync.now")
                if try await harness.call(device, "sync.status")["quiescent"] == true { return }
            }
            throw TestFailure("\(device) is not quiescent after three sync.now: \(try await harness.call(device, "sync.status"))")
        }
    }

    /// The device's objects, read again if a kill takes the reading.
    func snapshot(_ device: String) async throws -> (objects: [String: KillWorkloadModel.Object], objectIDs: [String: String], duplicates: [String]) {
        var result: (objects: [String: KillWorkloadModel.Object], objectIDs: [String: String], duplicates: [String]) = ([:], [:], [])
        try await retrying("reading \(device)") { result = try await harness.snapshot(device) }
        return result
    }

    // MARK: Operations

    /// A local write, the model's change it should make, and the device's view to check it in.
    struct Write {
        var name: String
        var apply: (inout KillWorkloadModel) -> Void
        var perform: (_ objectIDs: [String: String]) async throws -> Void
    }

    func view(_ model: KillWorkloadModel, on device: String) -> [String: KillWorkloadModel.Object] {
        device == "P" ? model.participantView : model.ownerView
    }

    /// The device's objects compared as its view of the model is (the participant's tags apart).
    func comparable(_ objects: [String: KillWorkloadModel.Object], on device: String) -> [String: KillWorkloadModel.Object] {
        device == "P" ? objects.filter { $0.value.entity != .Tag } : objects
    }

    func runOne() async throws {
        operations += 1
        let participantCan = !model.participantTrips.filter { model.shares[$0]?.permission == "readWrite" }.isEmpty
        let pendingAccept = model.shares.contains { !$0.value.accepted }
        let device = (participantCan || pendingAccept) && Int.random(in: 0..<3, using: &rng) == 0 ? "P" : (Bool.random(using: &rng) ? "O1" : "O2")
        current = "sync"
        try await sync(device)
        let (objects, objectIDs, duplicates) = try await snapshot(device)
        #expect(duplicates.isEmpty, "\(tag): \(device) holds ids twice: \(duplicates)")
        let expected = view(model, on: device)
        #expect(comparable(objects, on: device) == expected, "\(tag): \(device) after syncing differs from the acknowledged operations: \(difference(comparable(objects, on: device), expected))")
        if device == "P", pendingAccept, let trip = model.shares.first(where: { !$0.value.accepted })?.key, Bool.random(using: &rng) || !participantCan {
            try await accept(trip)
        } else if device != "P", let share = shareOperation(device) {
            try await share()
        } else if let write = choose(on: device) {
            try await perform(write, on: device, objectIDs: objectIDs)
        }
    }

    func difference(_ got: [String: KillWorkloadModel.Object], _ expected: [String: KillWorkloadModel.Object]) -> String {
        var lines: [String] = []
        for id in Set(got.keys).union(expected.keys).sorted() where got[id] != expected[id] {
            lines.append("\(id): device \(got[id].map(String.init(describing:)) ?? "none"), model \(expected[id].map(String.init(describing:)) ?? "none")")
        }
        return lines.prefix(8).joined(separator: "; ")
    }

    /// A local write: acknowledged, it is the model's; its reply lost to a kill, the restarted
    /// device shows all of it or none, and the model takes what it shows.
    func perform(_ write: Write, on device: String, objectIDs: [String: String]) async throws {
        current = device == "P" ? "participant.\(write.name)" : write.name
        var after = model
        write.apply(&after)
        if Self.trace { print("kill-workload-trace: \(write.name) on \(device): \(difference(after.objects, model.objects))") }
        do {
            try await write.perform(objectIDs)
            model = after
            acknowledged += 1
        } catch {
            guard try await killExplains(error) else { return }
            unknown += 1
            let objects = comparable(try await snapshot(device).objects, on: device)
            if objects == view(after, on: device) {
                model = after
                unknownApplied += 1
            } else {
                #expect(objects == view(model, on: device), "\(tag): \(write.name) on \(device), its reply lost, is half there: \(difference(objects, view(after, on: device)))")
            }
        }
        current = "send after \(write.name)"
        try await sync(device)
    }

    /// Saves one context on `device`: `build` inserts, sets or deletes in it.
    func save(_ device: String, _ build: (String) async throws -> Void) async throws {
        let context = try await harness.call(device, "context.open", ["mergePolicy": "mergeByPropertyObjectTrump"])["context"] ?? .null
        try await build(context.stringValue ?? "")
        try await harness.call(device, "context.save", ["context": context, "report": "summary"])
        try await harness.call(device, "context.close", ["context": context])
    }

    func insert(_ device: String, _ context: String, _ entity: Entity, _ values: [String: JSONValue]) async throws -> String {
        var item: [String: JSONValue] = ["entity": .string(entity.rawValue), "values": .object(values)]
        if device == "P" { item["store"] = "Shared" }
        let inserted = try await harness.call(device, "object.insert", ["context": .string(context), "objects": [.object(item)]])
        return inserted["objectIDs"]?.arrayValue?.first?.stringValue ?? ""
    }

    func set(_ device: String, _ objectID: String, _ values: [String: JSONValue]) -> Write.Perform {
        { [self] _ in try await save(device) { try await harness.call(device, "object.set", ["context": .string($0), "objectID": .string(objectID), "values": .object(values)]) } }
    }

    /// The trips a device may write in: the owner's all, the participant's shared with readWrite.
    func writableTrips(_ device: String) -> [String] {
        let trips = model.ids(.Trip)
        return device == "P" ? trips.filter { model.participantTrips.contains($0) && model.shares[$0]?.permission == "readWrite" } : trips
    }

    func choose(on device: String) -> Write? {
        let trips = writableTrips(device)
        let inTrips = { (entity: Entity) in self.model.ids(entity).filter { self.model.trip(of: $0).map(trips.contains) == true } }
        let days = inTrips(.Day), photos = inTrips(.Photo)
        let tagTrips = device == "P" ? [] : trips.filter { !model.everShared.contains($0) }
        let tags = model.ids(.Tag).filter { model.tagTrip[$0].map(tagTrips.contains) == true }
        var options: [(Int, () -> Write?)] = []
        if device != "P" { options.append((model.ids(.Trip).count < 3 ? 6 : 1, { self.insertTrip(device) })) }
        if !trips.isEmpty { options.append((4, { self.insertDay(device, trips.randomElement(using: &self.rng)!) })) }
        if !days.isEmpty { options.append((6, { self.insertPhoto(device, days.randomElement(using: &self.rng)!, tagTrips: tagTrips) })) }
        let editable = trips + days + photos + tags
        if !editable.isEmpty { options.append((6, { self.update(device, editable.randomElement(using: &self.rng)!) })) }
        let deletable = photos + photos + days + tags + (device == "P" ? [] : trips.filter { self.model.shares[$0] == nil && trips.count > 3 })
        if !deletable.isEmpty { options.append((3, { self.delete(device, deletable.randomElement(using: &self.rng)!) })) }
        if !photos.isEmpty { options.append((3, { self.movePhoto(device, photos.randomElement(using: &self.rng)!) })) }
        let linkable = photos.filter { self.model.trip(of: $0).map(tagTrips.contains) == true }
        if !linkable.isEmpty { options.append((4, { self.toggleTag(device, linkable.randomElement(using: &self.rng)!) })) }
        let total = options.reduce(0) { $0 + $1.0 }
        guard total > 0 else { return nil }
        var pick = Int.random(in: 0..<total, using: &rng)
        for (weight, make) in options {
            if pick < weight { return make() }
            pick -= weight
        }
        return nil
    }

    func insertTrip(_ device: String) -> Write {
        let id = fresh(), name = "trip \(counter)"
        return Write(name: "insertTrip", apply: { $0.objects[id] = .init(entity: .Trip, text: name) }) { [self] _ in
            try await save(device) { _ = try await insert(device, $0, .Trip, ["id": .string(id), "name": .string(name)]) }
        }
    }

    func insertDay(_ device: String, _ trip: String) -> Write {
        let id = fresh(), notes = "day \(counter)"
        return Write(name: "insertDay", apply: { $0.objects[id] = .init(entity: .Day, text: notes, parent: trip) }) { [self] ids in
            try await save(device) { _ = try await insert(device, $0, .Day, ["id": .string(id), "notes": .string(notes), "trip": .string(ids[trip] ?? "")]) }
        }
    }

    /// A photo in a day; in a trip never shared, sometimes with a new tag linked in the same save.
    func insertPhoto(_ device: String, _ day: String, tagTrips: [String]) -> Write {
        let id = fresh(), caption = "photo \(counter)"
        let trip = model.trip(of: day) ?? ""
        let tag: String? = tagTrips.contains(trip) && Bool.random(using: &rng) ? fresh() : nil
        let tagName = "tag \(counter)"
        return Write(name: tag == nil ? "insertPhoto" : "insertPhotoWithNewTag", apply: {
            $0.objects[id] = .init(entity: .Photo, text: caption, parent: day, tags: Set([tag].compactMap { $0 }))
            if let tag { $0.objects[tag] = .init(entity: .Tag, text: tagName); $0.tagTrip[tag] = trip }
        }) { [self] ids in
            try await save(device) { context in
                var values: [String: JSONValue] = ["id": .string(id), "caption": .string(caption), "day": .string(ids[day] ?? "")]
                if let tag { values["tags"] = [.string(try await insert(device, context, .Tag, ["id": .string(tag), "name": .string(tagName)]))] }
                _ = try await insert(device, context, .Photo, values)
            }
        }
    }

    func update(_ device: String, _ id: String) -> Write {
        let entity = model.objects[id]!.entity, text = "edit \(fresh().suffix(4))"
        return Write(name: "update\(entity.rawValue)", apply: { $0.objects[id]?.text = text }) { [self] ids in
            try await set(device, ids[id] ?? "", [KillWorkloadModel.textField(entity): .string(text)])(ids)
        }
    }

    func delete(_ device: String, _ id: String) -> Write {
        Write(name: "delete\(model.objects[id]!.entity.rawValue)", apply: { $0.delete(id) }) { [self] ids in
            try await save(device) { try await harness.call(device, "object.delete", ["context": .string($0), "objectID": .string(ids[id] ?? "")]) }
        }
    }

    /// A to-many change: the photo moves to another day of its trip (or stays, when there is none).
    func movePhoto(_ device: String, _ photo: String) -> Write? {
        let trip = model.trip(of: photo)
        let days = model.ids(.Day).filter { model.objects[$0]?.parent == trip && $0 != model.objects[photo]?.parent }
        guard let day = days.randomElement(using: &rng) else { return nil }
        return Write(name: "movePhoto", apply: { $0.objects[photo]?.parent = day }) { [self] ids in
            try await set(device, ids[photo] ?? "", ["day": .string(ids[day] ?? "")])(ids)
        }
    }

    /// A many-to-many change: a tag of the photo's trip added to it or taken off.
    func toggleTag(_ device: String, _ photo: String) -> Write? {
        let trip = model.trip(of: photo)
        guard let tag = model.ids(.Tag).filter({ model.tagTrip[$0] == trip }).randomElement(using: &rng),
              var tags = model.objects[photo]?.tags else { return nil }
        let adding = !tags.contains(tag)
        if adding { tags.insert(tag) } else { tags.remove(tag) }
        let final = tags
        return Write(name: adding ? "linkTag" : "unlinkTag", apply: { $0.objects[photo]?.tags = final }) { [self] ids in
            try await set(device, ids[photo] ?? "", ["tags": .array(final.sorted().map { .string(ids[$0] ?? "") })])(ids)
        }
    }

    // MARK: Sharing

    /// One of the owner's share operations, or nil to write instead.
    func shareOperation(_ device: String) -> (() async throws -> Void)? {
        guard Int.random(in: 0..<3, using: &rng) == 0 else { return nil }
        let unshared = model.ids(.Trip).filter { model.shares[$0] == nil }
        let shared = model.shares.keys.sorted()
        let kind = Int.random(in: 0..<4, using: &rng)
        if kind < 2, let trip = unshared.randomElement(using: &rng) {
            let permission = Bool.random(using: &rng) ? "readWrite" : "readOnly"
            return { try await self.shareCreate(device, trip, permission) }
        }
        guard let trip = shared.randomElement(using: &rng) else { return nil }
        if kind == 3 { return { try await self.stop(device, trip) } }
        let permission = model.shares[trip]?.permission == "readWrite" ? "readOnly" : "readWrite"
        return { try await self.setPermission(device, trip, permission) }
    }

    /// The participant has nothing queued before the owner changes what she may do (her device
    /// synced after each of its operations), so a permission change or a stop loses nothing of hers.
    func shareCreate(_ device: String, _ trip: String, _ permission: String) async throws {
        current = "shareCreate"
        try await cloudUp()
        let before = Set(try await harness.ownedShares().keys)
        let objectID = try await snapshot(device).objectIDs[trip] ?? ""
        do {
            let zone = try await harness.call(device, "share.create", ["objectID": .string(objectID),
                                                                       "participants": [["user": "alice", "permission": .string(permission)]]])["zoneName"]?.stringValue
            model.shares[trip] = .init(zoneName: zone ?? "", permission: permission)
            model.everShared.insert(trip)
            acknowledged += 1
        } catch {
            guard try await killExplains(error) else { return }
            unknown += 1
            // The share exists if the trip's record is in a new zone with a share on it.
            let shares = try await harness.ownedShares()
            let records = try await harness.ownerRecords()
            let zone = shares.keys.filter { !before.contains($0) }.first { zone in
                records[zone]?.contains { $0["recordType"] == "CD_Trip" && $0["fields"]?["CD_id"]?["value"]?.stringValue == trip } == true
            }
            if let zone {
                unknownApplied += 1
                var granted = shares[zone] ?? ""
                if granted.isEmpty {
                    // Made before its participant was invited: the app invites again.
                    try await retrying("share.invite") { try await harness.call(device, "share.invite", ["zoneName": .string(zone), "user": "alice", "permission": .string(permission)]) }
                    granted = permission
                }
                model.shares[trip] = .init(zoneName: zone, permission: granted)
                model.everShared.insert(trip)
            }
        }
        current = "sync after shareCreate"
        try await sync(device)
    }

    func accept(_ trip: String) async throws {
        current = "accept"
        guard let zone = model.shares[trip]?.zoneName else { return }
        do {
            try await harness.call("P", "share.accept", ["zoneName": .string(zone), "ownerName": "owner"])
            model.shares[trip]?.accepted = true
            acknowledged += 1
        } catch {
            guard try await killExplains(error) else { return }
            unknown += 1
            if try await harness.acceptedByAlice().contains(zone) {
                model.shares[trip]?.accepted = true
                unknownApplied += 1
            }
        }
        current = "sync after accept"
        try await sync("P")
    }

    func setPermission(_ device: String, _ trip: String, _ permission: String) async throws {
        current = "setPermission"
        guard let zone = model.shares[trip]?.zoneName else { return }
        do {
            try await harness.call(device, "share.setPermission", ["zoneName": .string(zone), "user": "alice", "permission": .string(permission)])
            model.shares[trip]?.permission = permission
            acknowledged += 1
        } catch {
            guard try await killExplains(error) else { return }
            unknown += 1
            if let now = try await harness.ownedShares()[zone], now != model.shares[trip]?.permission {
                model.shares[trip]?.permission = now
                unknownApplied += 1
            }
        }
    }

    func stop(_ device: String, _ trip: String) async throws {
        current = "stopSharing"
        guard let zone = model.shares[trip]?.zoneName else { return }
        do {
            try await harness.call(device, "share.stop", ["zoneName": .string(zone)])
            model.shares[trip] = nil
            acknowledged += 1
        } catch {
            guard try await killExplains(error) else { return }
            unknown += 1
            if try await harness.ownedShares()[zone] == nil {
                model.shares[trip] = nil
                unknownApplied += 1
            }
        }
    }

    // MARK: The end

    /// Every device syncs twice round; then each holds its view of the model exactly, the cloud
    /// holds every object once and each trip's graph in one zone, and the shares are as last
    /// acknowledged.
    func settleAndCheck() async throws {
        current = "settle"
        for device in KillWorkloadHarness.devices + KillWorkloadHarness.devices { try await sync(device) }
        for device in KillWorkloadHarness.devices {
            let (objects, _, duplicates) = try await snapshot(device)
            #expect(duplicates.isEmpty, "\(tag): \(device) holds ids twice: \(duplicates)")
            #expect(comparable(objects, on: device) == view(model, on: device),
                    "\(tag): \(device) differs from the acknowledged operations: \(difference(comparable(objects, on: device), view(model, on: device)))")
            if device == "P" {
                for (id, object) in objects where object.entity == .Tag {
                    #expect(model.objects[id] == object, "\(tag): P holds tag \(id) as \(object), the model \(String(describing: model.objects[id]))")
                }
            }
        }
        var zoneOf: [String: String] = [:]
        var seen: [String: Int] = [:]
        for (zone, records) in try await harness.ownerRecords() {
            for record in records where record["recordType"]?.stringValue?.hasPrefix("CD_") == true {
                guard let id = record["fields"]?["CD_id"]?["value"]?.stringValue else { continue }
                seen[id, default: 0] += 1
                zoneOf[id] = zone
            }
        }
        #expect(seen.filter { $0.value > 1 }.isEmpty, "\(tag): the cloud holds ids twice: \(seen.filter { $0.value > 1 })")
        #expect(Set(seen.keys) == Set(model.objects.keys),
                "\(tag): the cloud holds \(Set(seen.keys).subtracting(model.objects.keys).sorted()) the model has not, lacks \(Set(model.objects.keys).subtracting(seen.keys).sorted())")
        for id in model.objects.keys where model.objects[id]?.entity != .Tag {
            #expect(zoneOf[id] == zoneOf[model.trip(of: id) ?? ""], "\(tag): \(id) is in zone \(zoneOf[id] ?? "none"), its trip in \(zoneOf[model.trip(of: id) ?? ""] ?? "none")")
        }
        let owned = try await harness.ownedShares()
        let listed = Dictionary((try await harness.call("P", "share.list")["shares"]?.arrayValue ?? []).compactMap { share in
            share["zoneName"]?.stringValue.map { ($0, share["permission"]?.stringValue ?? "") }
        }, uniquingKeysWith: { first, _ in first })
        for (trip, share) in model.shares {
            #expect(owned[share.zoneName] == share.permission, "\(tag): trip \(trip)'s share gives alice \(owned[share.zoneName] ?? "nothing"), last acknowledged \(share.permission)")
            if share.accepted {
                #expect(listed[share.zoneName] == share.permission, "\(tag): P's metadata for \(share.zoneName) says \(listed[share.zoneName] ?? "nothing"), the share \(share.permission)")
            }
        }
    }
}

extension KillWorkload.Write {
    typealias Perform = (_ objectIDs: [String: String]) async throws -> Void
}
