import Foundation
import MeowWire
import TestSupport
import Testing

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
            let step = current.hasPrefix("sync") || current.hasPrefix("send") || current == "atRest" || current == "settle"
            if !step { performed[current, default: 0] += 1 }
        }
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

    /// Reads the cloud directly, as the test: a SIGKILL already sent to it is reaped first, and a
    /// point armed in it that the reading reaches itself (every request passes
    /// `sync.afterCommit`) kills it like any other request, so the reading is made again.
    func inspect<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        if let kill = harness.armed, kill.victim == "cloud", harness.sigkillSent {
            record(kill, status: try await harness.reap(), atRest: false)
        }
        var result: T?
        try await retrying(what) { result = try await body() }
        guard let result else { throw TestFailure("\(tag): \(what) gave nothing") }
        return result
    }

    func record(_ kill: KillWorkloadHarness.Kill, status: Int32?, atRest: Bool) {
        kills += 1
        #expect(status.map(Int.init) == 137, "\(tag): \(kill): the victim died as kill -9 would (status \(status.map(String.init) ?? "none"))")
        let point = kill.point.map { String($0.prefix { $0 != ":" }) } ?? "sigkill"
        print("kill-workload: seed=\(seed) iteration=\(iteration) kill=\(kills) \(kill) point=\(atRest ? "atRest" : point) op=\(current.replacingOccurrences(of: " ", with: "-"))")
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

    /// A local write: its name, the change it makes to the model, and the calls that make it
    /// on a device (given that device's object IDs by id).
    struct Write {
        typealias Perform = (_ objectIDs: [String: String]) async throws -> Void
        var name: String
        var apply: (inout KillWorkloadModel) -> Void
        var perform: Perform
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

    func difference(_ got: [String: KillWorkloadModel.Object], _ expected: [String: KillWorkloadModel.Object],
                    labels: (String, String) = ("device", "model")) -> String {
        var lines: [String] = []
        for id in Set(got.keys).union(expected.keys).sorted() where got[id] != expected[id] {
            lines.append("\(id): \(labels.0) \(got[id].map(String.init(describing:)) ?? "none"), \(labels.1) \(expected[id].map(String.init(describing:)) ?? "none")")
        }
        return lines.prefix(8).joined(separator: "; ")
    }

    /// A local write: acknowledged, it is the model's; its reply lost to a kill, the restarted
    /// device shows all of it or none, and the model takes what it shows.
    func perform(_ write: Write, on device: String, objectIDs: [String: String]) async throws {
        current = device == "P" ? "participant.\(write.name)" : write.name
        var after = model
        write.apply(&after)
        if Self.trace { print("kill-workload-trace: \(write.name) on \(device): \(difference(after.objects, model.objects, labels: ("now", "was")))") }
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
}
